package actors_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/snapcopier/copier/actors"
	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/store"
)

// panickyBroker makes the first opens of one account panic inside its AccountActor.
type panickyBroker struct {
	broker.Broker
	login  string
	panics atomic.Int32
}

func (b *panickyBroker) Connect(ctx context.Context, c broker.Credentials) (broker.Session, error) {
	s, err := b.Broker.Connect(ctx, c)
	if err != nil || c.Login != b.login {
		return s, err
	}
	return &panickySession{Session: s, b: b}, nil
}

type panickySession struct {
	broker.Session
	b *panickyBroker
}

func (s *panickySession) Open(ctx context.Context, r broker.OpenRequest) (broker.OrderResult, error) {
	if s.b.panics.Add(-1) >= 0 {
		panic("broker driver bug")
	}
	return s.Session.Open(ctx, r)
}

// TestCrashingAccountIsRestartedWithBackoff: an AccountActor that panics is restarted
// (with growing backoff), its failure shows in the status, the rest of the node copies on.
func TestCrashingAccountIsRestartedWithBackoff(t *testing.T) {
	c := newCluster(t, 1, 6)
	victim := c.followers[0]
	pb := &panickyBroker{Broker: c.sim, login: fmt.Sprintf("f%d", victim)}
	pb.panics.Store(2)
	n, err := actors.Start(context.Background(), actors.Config{NodeID: "n1", Platform: "sim", Capacity: 100, Lease: shortLease, ReconcileEvery: -1},
		actors.Deps{Pool: c.db.NewPool(t, store.Options{}), Broker: pb, Logger: zerolog.Nop()})
	must(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_ = n.Stop(ctx)
	})
	c.eventually("owned", 30*time.Second, c.allOwned("n1"))
	c.masterOpen(1, "EURUSD", broker.Buy, 0.2, 0, 0)
	c.eventually("everyone copied, the victim after two crashes", 30*time.Second, c.converged)
	if got := n.Metrics().Crashes.Load(); got != 2 {
		t.Fatalf("crashes = %d, want 2", got)
	}
	found := false
	for _, a := range n.Snapshot().Accounts {
		if a.ID == victim {
			found = true
			if a.Crashes != 2 || a.LastError == "" {
				t.Fatalf("victim status: %+v", a)
			}
		}
	}
	if !found {
		t.Fatal("victim missing from the snapshot")
	}
	if !n.Ready() {
		t.Fatal("the node went down with its account")
	}
}
