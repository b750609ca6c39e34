package actors_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/reconcile/follower"
)

// requotingSession requotes the first opens (left) of its account, then lets them through.
type requotingSession struct {
	broker.Session
	left *atomic.Int32
}

func (s *requotingSession) Open(ctx context.Context, r broker.OpenRequest) (broker.OrderResult, error) {
	if s.left.Add(-1) >= 0 {
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
	var left atomic.Int32
	left.Store(follower.MaxAttempts)
	n := c.startOn("n1", 10, &loginBroker{Broker: c.sim, login: login, wrap: func(s broker.Session) broker.Session {
		return &requotingSession{Session: s, left: &left}
	}})
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
