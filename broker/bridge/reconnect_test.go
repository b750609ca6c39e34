package bridge_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"testing"
	"time"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/broker/bridge"
)

// fastReconnect makes the client come back within milliseconds in tests.
var fastReconnect = bridge.ClientOptions{ReconnectMin: 5 * time.Millisecond, ReconnectMax: 50 * time.Millisecond}

func TestReconnectAfterServerRestart(t *testing.T) {
	s := newSim()
	ts := startServer(t, "127.0.0.1:0", s, s, bridge.ServerOptions{})
	c := dial(t, ts.addr, fastReconnect)
	ctx := t.Context()
	sess := connect(t, c, "restart")
	feed, err := sess.Subscribe(ctx)
	if err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	res, err := sess.Open(ctx, openReq(broker.Buy))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	first := recv(t, feed)

	ts.stop(t)
	waitClosed(t, feed) // a drop closes every subscription

	// While the server is down, calls fail before anything is sent.
	eventually(t, 10*time.Second, "calls to fail while the server is down", func() error {
		_, err := sess.Open(ctx, openReq(broker.Buy))
		if broker.ClassOf(err) != broker.ErrDisconnected {
			return errorf("Open while down: %v", err)
		}
		return nil
	})

	ts2 := startServer(t, ts.addr, s, s, bridge.ServerOptions{})
	_ = ts2
	// The session is reopened on the new connection by the next call.
	var ps []broker.Position
	eventually(t, 10*time.Second, "the session to work again", func() error {
		ps, err = sess.Positions(ctx)
		return err
	})
	if len(ps) != 1 || ps[0].Ticket != res.Ticket {
		t.Fatalf("positions after reconnect: %+v", ps)
	}
	again, err := sess.Subscribe(ctx)
	if err != nil {
		t.Fatalf("resubscribe: %v", err)
	}
	if _, err := sess.ClosePosition(ctx, broker.CloseRequest{Order: order(), Ticket: res.Ticket}); err != nil {
		t.Fatalf("ClosePosition: %v", err)
	}
	ev := recv(t, again)
	if ev.Epoch == first.Epoch || ev.Seq != 1 || ev.Kind != broker.Closed {
		t.Fatalf("event after resubscribing: %+v (old epoch %d)", ev, first.Epoch)
	}
}

// stallBroker's sessions block Open and Positions until their context ends, after
// announcing the call on entered.
type stallBroker struct {
	broker.Broker
	entered chan string
}

type stallSession struct {
	broker.Session
	entered chan string
}

func (b *stallBroker) Connect(ctx context.Context, creds broker.Credentials) (broker.Session, error) {
	s, err := b.Broker.Connect(ctx, creds)
	if err != nil {
		return nil, err
	}
	return stallSession{Session: s, entered: b.entered}, nil
}

func (s stallSession) Open(ctx context.Context, _ broker.OpenRequest) (broker.OrderResult, error) {
	s.entered <- "open"
	<-ctx.Done()
	return broker.OrderResult{}, ctx.Err()
}

func (s stallSession) Positions(ctx context.Context) ([]broker.Position, error) {
	s.entered <- "positions"
	<-ctx.Done()
	return nil, ctx.Err()
}

func TestDropWithCallsInFlight(t *testing.T) {
	s := newSim()
	stall := &stallBroker{Broker: s, entered: make(chan string, 2)}
	ts := startServer(t, "127.0.0.1:0", stall, s, bridge.ServerOptions{})
	c := dial(t, ts.addr, fastReconnect)
	ctx := t.Context()
	sess := connect(t, c, "drop")

	openErr, readErr := make(chan error, 1), make(chan error, 1)
	go func() {
		_, err := sess.Open(ctx, openReq(broker.Buy))
		openErr <- err
	}()
	go func() {
		_, err := sess.Positions(ctx)
		readErr <- err
	}()
	for range 2 {
		select {
		case <-stall.entered:
		case <-time.After(10 * time.Second):
			t.Fatal("calls did not reach the server")
		}
	}
	ts.stop(t)
	// The order was on the server when the connection dropped: its outcome is unknown.
	wantClass(t, <-openErr, broker.ErrUnknownOutcome, 0)
	// A read is simply safe to resend.
	wantClass(t, <-readErr, broker.ErrDisconnected, 0)

	// The client reconnects to a new server on the same address (this one does not stall).
	startServer(t, ts.addr, s, s, bridge.ServerOptions{})
	eventually(t, 10*time.Second, "an order to go through after the restart", func() error {
		_, err := sess.Open(ctx, openReq(broker.Sell))
		return err
	})
}

func TestClientClose(t *testing.T) {
	s := newSim()
	ts := startServer(t, "127.0.0.1:0", s, s, bridge.ServerOptions{})
	c, err := bridge.Dial(t.Context(), ts.addr, bridge.ClientOptions{Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	sess, err := c.Connect(t.Context(), broker.Credentials{Login: "bye"})
	if err != nil {
		t.Fatal(err)
	}
	feed, err := sess.Subscribe(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	waitClosed(t, feed)
	_, err = sess.Account(t.Context())
	wantClass(t, err, broker.ErrDisconnected, broker.CodeNoConnection)
	_, err = c.Connect(t.Context(), broker.Credentials{Login: "bye"})
	wantClass(t, err, broker.ErrDisconnected, broker.CodeNoConnection)
	if err := sess.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestSilentServerIsDropped checks the client's keepalive: a server that completes the
// handshake and then never answers (a hung terminal, a half-open connection) is given up
// after three ping intervals, and the client dials again.
func TestSilentServerIsDropped(t *testing.T) {
	l := listen(t, "127.0.0.1:0")
	accepted := make(chan net.Conn, 16)
	go func() {
		for {
			nc, err := l.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- nc
		}
	}()
	var conns []net.Conn
	defer func() {
		_ = l.Close()
		for nc := range accepted {
			conns = append(conns, nc)
		}
		for _, nc := range conns {
			_ = nc.Close()
		}
	}()
	// welcome answers one hello and then reads and ignores everything.
	welcome := func(nc net.Conn) {
		rc := &rawConn{t: t, nc: nc, r: bufio.NewReader(nc)}
		if m := rc.recv(); m["type"] != "hello" {
			t.Errorf("first frame: %v", m)
		}
		rc.send(`{"type":"welcome","version":1,"max_inflight":8}`)
		go func() { _, _ = io.Copy(io.Discard, nc) }()
	}
	dialed := make(chan *bridge.Client, 1)
	go func() {
		c, err := bridge.Dial(t.Context(), l.Addr().String(), bridge.ClientOptions{Token: testToken,
			PingInterval: 20 * time.Millisecond, ReconnectMin: time.Millisecond, ReconnectMax: 5 * time.Millisecond})
		if err != nil {
			t.Errorf("dial: %v", err)
		}
		dialed <- c
	}()
	first := <-accepted
	conns = append(conns, first)
	welcome(first)
	c := <-dialed
	if c == nil {
		return
	}
	defer c.Close()
	select {
	case second := <-accepted: // the client gave up on the first connection and came back
		conns = append(conns, second)
		welcome(second)
	case <-time.After(10 * time.Second):
		t.Fatal("the client did not notice the silent server")
	}
}
