package bridge

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/broker/sim"
	"github.com/snapcopier/copier/internal/testwait"
)

// startInternal serves a fresh simulator on loopback for the package's internal tests.
func startInternal(t *testing.T, opts ServerOptions) (*sim.Server, *Server, string) {
	t.Helper()
	s := sim.New(sim.Config{Seed: 1, AutoProvision: true})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if opts.Token == "" {
		opts.Token = "internal"
	}
	srv := NewServer(s, s, opts)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l) }()
	t.Cleanup(func() {
		_ = srv.Close()
		if err := <-done; !errors.Is(err, ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
	})
	return s, srv, l.Addr().String()
}

// poll calls cond until it holds or 10 s pass.
func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testwait.For(t, what, 10*time.Second, func() (bool, string) { return cond(), "not yet" })
}

// serverSubs counts the subscriptions the server holds over all connections.
func serverSubs(srv *Server) int {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	n := 0
	for c := range srv.conns {
		c.mu.Lock()
		n += len(c.subs)
		c.mu.Unlock()
	}
	return n
}

// clientSubs counts the subscriptions on the client's live connection.
func clientSubs(c *Client) int {
	cc, err := c.current()
	if err != nil {
		return -1
	}
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return len(cc.subs)
}

func TestSlowSubscriberLosesSubscription(t *testing.T) {
	s, srv, addr := startInternal(t, ServerOptions{})
	ctx := t.Context()
	c, err := Dial(ctx, addr, ClientOptions{Token: "internal", SubscriptionBuffer: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sess, err := c.Connect(ctx, broker.Credentials{Login: "slow-sub"})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	feed, err := sess.Subscribe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if clientSubs(c) != 1 || serverSubs(srv) != 1 {
		t.Fatalf("subscriptions: client %d, server %d; want 1 and 1", clientSubs(c), serverSubs(srv))
	}
	for range 20 {
		if _, err := s.MasterOpen(ctx, "slow-sub", broker.MasterOpenRequest{Symbol: "EURUSD", Side: broker.Buy, Volume: 0.01}); err != nil {
			t.Fatal(err)
		}
	}
	// Nobody reads: the fifth event finds the buffer full and ends the subscription on
	// both sides.
	poll(t, "the client to drop the subscription", func() bool { return clientSubs(c) == 0 })
	poll(t, "the server to drop the subscription", func() bool { return serverSubs(srv) == 0 })
	n := 0
	for range feed {
		n++
	}
	if n != 4 {
		t.Fatalf("read %d buffered events, want 4", n)
	}
	again, err := sess.Subscribe(ctx)
	if err != nil {
		t.Fatalf("resubscribe: %v", err)
	}
	if _, err := s.MasterOpen(ctx, "slow-sub", broker.MasterOpenRequest{Symbol: "EURUSD", Side: broker.Sell, Volume: 0.01}); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-again:
		if ev.Seq != 1 {
			t.Fatalf("first event of the new subscription has Seq %d", ev.Seq)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no event on the new subscription")
	}
}

func TestSessionCloseReleasesServerState(t *testing.T) {
	_, srv, addr := startInternal(t, ServerOptions{})
	ctx := t.Context()
	c, err := Dial(ctx, addr, ClientOptions{Token: "internal"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sessions := func() int {
		srv.mu.Lock()
		defer srv.mu.Unlock()
		n := 0
		for sc := range srv.conns {
			sc.mu.Lock()
			n += len(sc.sessions)
			sc.mu.Unlock()
		}
		return n
	}
	sess, err := c.Connect(ctx, broker.Credentials{Login: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sess.Subscribe(ctx); err != nil {
		t.Fatal(err)
	}
	if sessions() != 1 || serverSubs(srv) != 1 {
		t.Fatalf("server holds %d sessions and %d subscriptions, want 1 and 1", sessions(), serverSubs(srv))
	}
	if err := sess.Close(); err != nil {
		t.Fatal(err)
	}
	if sessions() != 0 {
		t.Fatalf("server holds %d sessions after Close", sessions())
	}
	poll(t, "the server to drop the subscription", func() bool { return serverSubs(srv) == 0 })

}

// lateBroker connects only after release is closed, whatever the caller's context says,
// like a terminal that cannot abort a login.
type lateBroker struct {
	broker.Broker
	entered chan struct{}
	release chan struct{}
}

func (b *lateBroker) Connect(_ context.Context, creds broker.Credentials) (broker.Session, error) {
	b.entered <- struct{}{}
	<-b.release
	return b.Broker.Connect(context.Background(), creds)
}

func TestAbandonedConnectIsClosed(t *testing.T) {
	s := sim.New(sim.Config{Seed: 1, AutoProvision: true})
	late := &lateBroker{Broker: s, entered: make(chan struct{}, 1), release: make(chan struct{})}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer(late, nil, ServerOptions{})
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l) }()
	defer func() {
		_ = srv.Close()
		<-done
	}()
	ctx := t.Context()
	c, err := Dial(ctx, l.Addr().String(), ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	_, err = c.Connect(short, broker.Credentials{Login: "late"})
	if !errors.Is(err, broker.ErrDisconnected) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Connect past its deadline: %v", err)
	}
	<-late.entered
	close(late.release) // the terminal logs in after the caller gave up
	open := func() int {
		srv.mu.Lock()
		defer srv.mu.Unlock()
		n := 0
		for sc := range srv.conns {
			sc.mu.Lock()
			n += len(sc.sessions)
			sc.mu.Unlock()
		}
		return n
	}
	poll(t, "the late session to be closed", func() bool { return open() == 0 })
}

func TestBackoff(t *testing.T) {
	b := reconnects{min: 100 * time.Millisecond, max: time.Second}
	ceilings := []time.Duration{100, 200, 400, 800, 1000, 1000}
	for i, ceil := range ceilings {
		ceil *= time.Millisecond
		d := b.next()
		if d < ceil/2 || d > ceil {
			t.Fatalf("attempt %d: wait %v outside [%v, %v]", i, d, ceil/2, ceil)
		}
	}
	for range 100 {
		b.next() // no overflow however long it goes
	}
	if d := b.next(); d < 500*time.Millisecond || d > time.Second {
		t.Fatalf("wait %v after many attempts", d)
	}
	b.reset()
	if d := b.next(); d > 100*time.Millisecond {
		t.Fatalf("wait %v after reset", d)
	}
}

// TestFrameMemoryFollowsBytesNotHeaders: a frame takes memory as its bytes arrive, not
// as its header declares (a 16 MiB header followed by a few bytes once cost 16 MiB per
// connection), and above the reader's limit nothing is read at all.
func TestFrameMemoryFollowsBytesNotHeaders(t *testing.T) {
	frame := func(declared uint32, body string) io.Reader {
		var hdr [4]byte
		binary.BigEndian.PutUint32(hdr[:], declared)
		return io.MultiReader(bytes.NewReader(hdr[:]), strings.NewReader(body))
	}
	allocated := func(f func()) uint64 {
		var a, b runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&a)
		f()
		runtime.ReadMemStats(&b)
		return b.TotalAlloc - a.TotalAlloc
	}
	for _, c := range []struct {
		name  string
		limit int
	}{{"authenticated", MaxFrameSize}, {"before the handshake", MaxHelloSize}} {
		fr := newFrameReader(frame(MaxFrameSize, `{"type":"hel`))
		fr.limit = c.limit
		var err error
		if n := allocated(func() { _, err = fr.next() }); n > 2<<20 {
			t.Errorf("%s: a truncated 16 MiB frame allocated %d bytes", c.name, n)
		}
		if err == nil {
			t.Errorf("%s: a truncated frame was accepted", c.name)
		}
	}
	fr := newFrameReader(frame(MaxHelloSize+1, `{}`))
	fr.limit = MaxHelloSize
	if _, err := fr.next(); err == nil || !strings.Contains(err.Error(), "exceeds the limit") {
		t.Fatalf("above the limit: %v", err)
	}
	// A whole large frame still reads.
	big := `{"type":"x","reason":"` + strings.Repeat("a", 3<<20) + `"}`
	fr = newFrameReader(frame(uint32(len(big)), big))
	f, err := fr.next()
	if err != nil || len(f.Reason) != 3<<20 {
		t.Fatalf("a 3 MiB frame: %v", err)
	}
}
