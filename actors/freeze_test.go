package actors_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/snapcopier/copier/actors"
	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/store"
)

// freezingBroker stands for a process that freezes between the gate check and the send:
// while frozen, every order call blocks just before it reaches the trade server.
type freezingBroker struct {
	broker.Broker
	mu      sync.Mutex
	release chan struct{} // nil: not frozen
	held    sync.WaitGroup
	blocked int
}

func (f *freezingBroker) Connect(ctx context.Context, c broker.Credentials) (broker.Session, error) {
	s, err := f.Broker.Connect(ctx, c)
	if err != nil {
		return nil, err
	}
	return &freezingSession{Session: s, f: f}, nil
}

func (f *freezingBroker) freeze() {
	f.mu.Lock()
	f.release = make(chan struct{})
	f.mu.Unlock()
}

func (f *freezingBroker) thaw() {
	f.mu.Lock()
	close(f.release)
	f.release = nil
	f.mu.Unlock()
}

func (f *freezingBroker) blockedOrders() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.blocked
}

func (f *freezingBroker) wait() {
	f.mu.Lock()
	ch := f.release
	if ch != nil {
		f.blocked++
	}
	f.mu.Unlock()
	if ch != nil {
		<-ch
	}
}

type freezingSession struct {
	broker.Session
	f *freezingBroker
}

func (s *freezingSession) Open(ctx context.Context, r broker.OpenRequest) (broker.OrderResult, error) {
	s.f.wait()
	return s.Session.Open(ctx, r)
}

func (s *freezingSession) ClosePosition(ctx context.Context, r broker.CloseRequest) (broker.OrderResult, error) {
	s.f.wait()
	return s.Session.ClosePosition(ctx, r)
}

func (s *freezingSession) Modify(ctx context.Context, r broker.ModifyRequest) (broker.OrderResult, error) {
	s.f.wait()
	return s.Session.Modify(ctx, r)
}

// TestFreezeLongerThanTheFence: n1 passes its gate, then freezes in the send for longer
// than the fence while cut from the database; n2 takes over and copies; then n1's held
// orders reach the server with a stale token. With token enforcement they are rejected;
// without it the duplicates they open are closed by n2's reconcile.
func TestFreezeLongerThanTheFence(t *testing.T) {
	for _, enforce := range []bool{true, false} {
		t.Run(fmt.Sprintf("enforce=%v", enforce), func(t *testing.T) { freezeScenario(t, enforce) })
	}
}

func freezeScenario(t *testing.T, enforce bool) {
	c := newCluster(t, 1, 10)
	ctx := context.Background()
	must(t, c.sim.SetOptions(ctx, broker.ServerOptions{EnforceTokens: enforce}))
	db := c.proxiedPool("pg-n1")

	fb := &freezingBroker{Broker: c.sim}
	n1, err := actors.Start(ctx, actors.Config{NodeID: "n1", Platform: "sim", Capacity: 100, Lease: shortLease, ReconcileEvery: -1,
		OrderTimeout: time.Minute}, // the frozen orders outlive the freeze, however slow the takeover
		actors.Deps{Pool: db.pool, Broker: fb, Logger: zerolog.Nop()})
	must(t, err)
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		_ = n1.Stop(sctx)
	})
	c.eventually("n1 owns all", 30*time.Second, c.allOwned("n1"))
	c.masterOpen(1, "EURUSD", broker.Buy, 0.1, 0, 0)
	c.eventually("copied", 30*time.Second, c.converged)

	// Freeze: n1's orders block after the gate check (every follower's, while the gate is
	// surely open), then n1 is cut from the database.
	fb.freeze()
	x := c.masterOpen(1, "GBPUSD", broker.Sell, 0.2, 0, 0)
	c.eventually("n1 passed its gates and froze in the send", 30*time.Second, func() (bool, string) {
		return fb.blockedOrders() >= len(c.followers), fmt.Sprint(fb.blockedOrders(), " blocked")
	})
	db.cut(true)
	// n2 takes over once the leases expire, and its reconcile copies x.
	c.nodes["n2"] = nil
	n2, err := actors.Start(ctx, actors.Config{NodeID: "n2", Platform: "sim", Capacity: 100, Lease: shortLease, ReconcileEvery: 500 * time.Millisecond},
		actors.Deps{Pool: c.db.NewPool(t, store.Options{}), Broker: c.sim, Logger: zerolog.Nop()})
	must(t, err)
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		_ = n2.Stop(sctx)
	})
	c.eventually("n2 owns all", 30*time.Second, c.allOwned("n2"))
	c.eventually("n2 copied x", 30*time.Second, c.converged)

	// Thaw: n1's held orders reach the server with the old epoch.
	logBefore, err := c.sim.OrderLog(ctx, 0, 0)
	must(t, err)
	fb.thaw()
	var stale []broker.OrderLogEntry
	c.eventually("n1's held orders reached the server", 10*time.Second, func() (bool, string) {
		log, err := c.sim.OrderLog(ctx, logBefore[len(logBefore)-1].Seq, 0)
		must(t, err)
		stale = stale[:0]
		for _, e := range log {
			if e.Node == "n1" && e.Op == broker.OpOpen {
				stale = append(stale, e)
			}
		}
		return len(stale) >= len(c.followers), fmt.Sprint(len(stale), " arrived")
	})
	for _, e := range stale {
		if enforce && (e.Executed || e.Result != broker.CodeFencedToken) {
			t.Errorf("stale order accepted with token enforcement: %+v", e)
		}
		if e.Comment != "" && !strings.HasSuffix(e.Comment, fmt.Sprint(x.Ticket)) {
			t.Errorf("unexpected stale order %+v", e)
		}
	}
	if !enforce && len(c.duplicateOpens()) == 0 {
		t.Error("without enforcement the stale orders should have opened duplicates for n2 to repair")
	}
	// Either way nothing is left duplicated.
	c.eventually("duplicates repaired", 30*time.Second, c.converged)
}
