package actors_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/snapcopier/copier/actors"
	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/leasekeeper"
	"github.com/snapcopier/copier/store"
)

// syncBuffer is a log sink safe for the node's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestCleanStopIsQuiet: a clean stop with nothing in flight logs no warning (it once
// reported the release listener's connection as lost).
func TestCleanStopIsQuiet(t *testing.T) {
	c := newCluster(t, 1, 3)
	var logs syncBuffer
	n, err := actors.Start(context.Background(), actors.Config{NodeID: "n1", Platform: "sim", Capacity: 100, Lease: shortLease, ReconcileEvery: -1},
		actors.Deps{Pool: c.db.NewPool(t, store.Options{}), Broker: c.sim, Logger: zerolog.New(&logs).Level(zerolog.WarnLevel)})
	must(t, err)
	c.eventually("n1 owns all and listens", 30*time.Second, func() (bool, string) {
		ok, detail := c.allOwned("n1")()
		return ok && n.Listening(), detail
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	before := len(logs.String())
	must(t, n.Stop(ctx))
	for _, line := range strings.Split(strings.TrimSpace(logs.String()[before:]), "\n") {
		var e struct{ Level, Message string }
		if line != "" && json.Unmarshal([]byte(line), &e) == nil && e.Level != "" {
			t.Errorf("a clean stop logged at %s: %s", e.Level, e.Message)
		}
	}
}

// slowConnectBroker holds the connection of one login until released, and counts that
// login's open sessions.
type slowConnectBroker struct {
	broker.Broker
	login   string
	asked   chan struct{} // closed when the held connect is asked for
	release chan struct{}
	once    sync.Once
	opened  atomic.Int32 // sessions of login connected
	open    atomic.Int32 // ... and not closed
}

func (b *slowConnectBroker) Connect(ctx context.Context, c broker.Credentials) (broker.Session, error) {
	if c.Login != b.login {
		return b.Broker.Connect(ctx, c)
	}
	b.once.Do(func() { close(b.asked) })
	<-b.release
	s, err := b.Broker.Connect(ctx, c)
	if err != nil {
		return nil, err
	}
	b.opened.Add(1)
	b.open.Add(1)
	return &countedSession{Session: s, open: &b.open}, nil
}

type countedSession struct {
	broker.Session
	open   *atomic.Int32
	closed atomic.Bool
}

func (s *countedSession) Close() error {
	if s.closed.CompareAndSwap(false, true) {
		s.open.Add(-1)
	}
	return s.Session.Close()
}

// TestSessionConnectedAfterItsAccountStoppedIsClosed: an account's session connects only
// after its actor has stopped (the node stopped meanwhile), so the message that hands it
// over is never handled. The session must be closed, not left open until the process ends.
func TestSessionConnectedAfterItsAccountStoppedIsClosed(t *testing.T) {
	c := newCluster(t, 1, 2)
	victim := c.followers[0]
	b := &slowConnectBroker{Broker: c.sim, login: fmt.Sprintf("f%d", victim), asked: make(chan struct{}), release: make(chan struct{})}
	n, err := actors.Start(context.Background(), actors.Config{NodeID: "n1", Platform: "sim", Capacity: 100, Lease: shortLease, ReconcileEvery: -1},
		actors.Deps{Pool: c.db.NewPool(t, store.Options{}), Broker: b, Logger: zerolog.Nop()})
	must(t, err)
	select {
	case <-b.asked:
	case <-time.After(30 * time.Second):
		t.Fatal("the account never asked for its session")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	must(t, n.Stop(ctx))
	close(b.release)
	c.eventually("the late session closed", 30*time.Second, func() (bool, string) {
		return b.opened.Load() == 1 && b.open.Load() == 0, fmt.Sprintf("%d connected, %d open", b.opened.Load(), b.open.Load())
	})
}

// stuckBroker holds the first order of one login (a driver stuck on the wire) until
// released.
type stuckBroker struct {
	broker.Broker
	login   string
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

func (b *stuckBroker) Connect(ctx context.Context, c broker.Credentials) (broker.Session, error) {
	s, err := b.Broker.Connect(ctx, c)
	if err != nil || c.Login != b.login {
		return s, err
	}
	return &stuckSession{Session: s, b: b}, nil
}

type stuckSession struct {
	broker.Session
	b *stuckBroker
}

func (s *stuckSession) Open(ctx context.Context, r broker.OpenRequest) (broker.OrderResult, error) {
	s.b.once.Do(func() { close(s.b.entered) })
	<-s.b.release
	return s.Session.Open(ctx, r)
}

// TestStopReleasesNoAccountStillSending: one account's actor is stuck sending an order
// when the node stops, past the stop's budget for the accounts. Its lease is not released
// (a new owner would copy beside that order); every other account's is.
func TestStopReleasesNoAccountStillSending(t *testing.T) {
	c := newCluster(t, 1, 3)
	victim := c.followers[0]
	b := &stuckBroker{Broker: c.sim, login: fmt.Sprintf("f%d", victim), entered: make(chan struct{}), release: make(chan struct{})}
	t.Cleanup(func() { close(b.release) })
	n, err := actors.Start(context.Background(), actors.Config{NodeID: "n1", Platform: "sim", Capacity: 100, Lease: leasekeeper.DefaultConfig(), ReconcileEvery: -1},
		actors.Deps{Pool: c.db.NewPool(t, store.Options{}), Broker: b, Logger: zerolog.Nop(), Observe: c.signals.Add})
	must(t, err)
	c.eventually("n1 owns all", 30*time.Second, c.allOwned("n1"))
	c.awaitIdle("followers idle", 0, c.followers)
	c.masterOpen(1, "EURUSD", broker.Buy, 0.1, 0, 0)
	select {
	case <-b.entered:
	case <-time.After(30 * time.Second):
		t.Fatal("the victim never sent its order")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	_ = n.Stop(ctx)
	for id, r := range c.owners() {
		switch {
		case id == victim && r.NodeID != "n1":
			t.Errorf("account %d, still sending at the stop, was released (owner %q)", id, r.NodeID)
		case id != victim && r.NodeID != "":
			t.Errorf("account %d still owned by %q after the stop", id, r.NodeID)
		}
	}
}
