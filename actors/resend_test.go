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
	"github.com/snapcopier/copier/reconcile/follower"
	"github.com/snapcopier/copier/store"
)

// requotingBroker requotes the first n opens of one account, then lets them through.
type requotingBroker struct {
	broker.Broker
	login string
	left  atomic.Int32
}

func (b *requotingBroker) Connect(ctx context.Context, c broker.Credentials) (broker.Session, error) {
	s, err := b.Broker.Connect(ctx, c)
	if err != nil || c.Login != b.login {
		return s, err
	}
	return &requotingSession{Session: s, b: b}, nil
}

type requotingSession struct {
	broker.Session
	b *requotingBroker
}

func (s *requotingSession) Open(ctx context.Context, r broker.OpenRequest) (broker.OrderResult, error) {
	if s.b.left.Add(-1) >= 0 {
		return broker.OrderResult{}, broker.NewError(broker.ErrRetryable, broker.CodeRequote, "requote")
	}
	return s.Session.Open(ctx, r)
}

// TestRequoteIsResent: an order the trade server requotes is sent again on the Core's
// resend timer (follower.Ready.ResendIn), not by a sleep in the mailbox: MaxAttempts in
// all, each counted, and only then given up (one "retryable" journal entry); the
// account's next reconcile copies the position. The broker requotes exactly MaxAttempts
// opens, so the counts do not depend on timing: without resends each requote would be
// given up and journalled on its own.
func TestRequoteIsResent(t *testing.T) {
	c := newCluster(t, 1, 1)
	ctx := context.Background()
	f := c.followers[0]
	login := fmt.Sprintf("f%d", f)
	rb := &requotingBroker{Broker: c.sim, login: login}
	rb.left.Store(follower.MaxAttempts)
	n, err := actors.Start(ctx, actors.Config{NodeID: "n1", Platform: "sim", Capacity: 10, Lease: shortLease, ReconcileEvery: -1},
		actors.Deps{Pool: c.db.NewPool(t, store.Options{}), Broker: rb, Logger: zerolog.Nop(), Observe: c.signals.Add})
	must(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_ = n.Stop(ctx)
	})
	c.awaitIdle("follower idle", 0, []int64{f})

	c.masterOpen(1, "EURUSD", broker.Buy, 0.5, 0, 0)
	c.eventually("copied once the requotes stop", 30*time.Second, func() (bool, string) {
		ps, err := c.sim.AccountPositions(ctx, login)
		must(t, err)
		return len(ps) == 1 && ps[0].Volume == 0.5, fmt.Sprintf("follower positions %+v", ps)
	})
	if got := n.Metrics().OrdersRetryable.Load(); got != follower.MaxAttempts {
		t.Fatalf("%d requotes counted, want %d (every attempt)", got, follower.MaxAttempts)
	}
	given := 0
	for _, a := range n.Snapshot().Accounts {
		for _, e := range a.Journal {
			if a.ID == f && e.Result == "retryable" {
				given++
			}
		}
	}
	if given != 1 {
		t.Fatalf("%d orders given up as retryable, want 1 (resent %d times first)", given, follower.MaxAttempts)
	}
}
