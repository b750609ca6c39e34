package actors_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/reconcile"
	"github.com/snapcopier/copier/reconcile/follower"
)

// jumpingSession moves its symbol's market up by jump just before the account's first
// open reaches the trade server: the market moving between the plan's quote and the fill.
type jumpingSession struct {
	broker.Session
	jump   func()
	jumped *atomic.Bool
}

func (s *jumpingSession) Open(ctx context.Context, r broker.OpenRequest) (broker.OrderResult, error) {
	if !s.jumped.Swap(true) {
		s.jump()
	}
	return s.Session.Open(ctx, r)
}

// TestDeviationBoundHoldsAtTheFill: a link bounds the price deviation (100 points, ten
// times the simulator's noise over the seconds a quote stays current). The master buys;
// the follower's plan passes the check, and then, before the order reaches the trade
// server, the market jumps 2,000 points up. The order carries the bound (its
// worst price), so the server requotes it instead of filling it 2,000 points away; the
// resends are requoted too, and the reconcile after them checks the copy against the new
// quote and skips it. Before, the copy was opened at the jumped price.
func TestDeviationBoundHoldsAtTheFill(t *testing.T) {
	c := newCluster(t, 1, 1)
	ctx := context.Background()
	settings := reconcile.DefaultSettings()
	settings.Window.MaxDeviationPoints = 100
	raw, err := json.Marshal(settings)
	must(t, err)
	_, err = c.db.Pool.Exec(ctx, `UPDATE copy_links SET settings = $1`, raw)
	must(t, err)
	f := c.followers[0]
	login := fmt.Sprintf("f%d", f)
	var jumped atomic.Bool
	jump := func() {
		ps, err := c.sim.AccountPositions(ctx, "m1")
		must(t, err)
		c.sim.SetPrice("EURUSD", ps[0].OpenPrice+0.02)
	}
	n := c.startOn("n1", 10, &loginBroker{Broker: c.sim, login: login, wrap: func(s broker.Session) broker.Session {
		return &jumpingSession{Session: s, jump: jump, jumped: &jumped}
	}})
	c.awaitIdle("follower idle", 0, []int64{f})

	mark := c.signals.Len()
	c.masterOpen(1, "EURUSD", broker.Buy, 1, 0, 0)
	c.awaitIdle("the copy given up and reconciled", mark, []int64{f})
	if !jumped.Load() {
		t.Fatal("no open reached the trade server: the test proves nothing")
	}
	ps, err := c.sim.AccountPositions(ctx, login)
	must(t, err)
	if len(ps) != 0 {
		t.Fatalf("the copy was opened 2,000 points from the master's price: %+v", ps)
	}
	if got := n.Metrics().OrdersRetryable.Load(); got != follower.MaxAttempts {
		t.Fatalf("%d requotes, want %d (each attempt refused at the fill)", got, follower.MaxAttempts)
	}
}
