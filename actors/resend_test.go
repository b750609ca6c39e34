package actors_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/reconcile/follower"
)

// TestRequoteIsResent: an order the trade server requotes is sent again on the Core's
// resend timer (follower.Ready.ResendIn), not by a sleep in the mailbox: MaxAttempts in
// all, each counted, the last journalled as retryable; once the requotes stop, the
// account's next reconcile copies the position.
func TestRequoteIsResent(t *testing.T) {
	c := newCluster(t, 1, 1)
	ctx := context.Background()
	f := c.followers[0]
	login := fmt.Sprintf("f%d", f)
	mark := c.signals.Len()
	n := c.start("n1", 10, nil)
	c.awaitIdle("follower idle", mark, []int64{f})

	must(t, c.sim.SetFaults(ctx, login, broker.Faults{RequoteRate: 1}))
	c.masterOpen(1, "EURUSD", broker.Buy, 0.5, 0, 0)
	c.eventually("the requoted copy journalled after its resends", 30*time.Second, func() (bool, string) {
		for _, a := range n.Snapshot().Accounts {
			for _, e := range a.Journal {
				if a.ID == f && e.Result == "retryable" {
					return true, ""
				}
			}
		}
		return false, fmt.Sprintf("%d requotes counted", n.Metrics().OrdersRetryable.Load())
	})
	if got := n.Metrics().OrdersRetryable.Load(); got != follower.MaxAttempts {
		t.Fatalf("%d requotes counted, want %d (every attempt)", got, follower.MaxAttempts)
	}

	must(t, c.sim.SetFaults(ctx, login, broker.Faults{}))
	c.eventually("copied once the requotes stop", 30*time.Second, func() (bool, string) {
		ps, err := c.sim.AccountPositions(ctx, login)
		must(t, err)
		return len(ps) == 1 && ps[0].Volume == 0.5, fmt.Sprintf("follower positions %+v", ps)
	})
}
