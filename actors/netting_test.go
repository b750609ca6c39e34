package actors_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/snapcopier/copier/broker"
)

// TestNettingUnknownCloseKeepsCopies: on a netting follower two master positions net to
// zero and every order's outcome is unknown until the close has executed. The engine
// writes the close's ticket-map changes although its outcome is unknown
// (reconcile.Action.UnknownOutcomeChanges), so the masters stay copied: when one closes,
// the other's share is opened. Without that write the map points at the closed position
// and the planner must take the copies for closed by the user.
func TestNettingUnknownCloseKeepsCopies(t *testing.T) {
	c := newCluster(t, 1, 1)
	ctx := context.Background()
	f := fmt.Sprintf("f%d", c.followers[0])
	must(t, c.sim.Provision(ctx, broker.AccountSpec{Login: f, Balance: 100_000, Mode: broker.Netting}))
	c.start("n1", 10, nil)
	c.eventually("owned", 30*time.Second, c.allOwned())
	c.awaitIdle("followers idle after start", 0, c.followers)

	positions := func() []broker.Position {
		ps, err := c.sim.AccountPositions(ctx, f)
		must(t, err)
		return ps
	}
	holds := func(side broker.Side, volume float64) func() (bool, string) {
		return func() (bool, string) {
			ps := positions()
			if volume == 0 {
				return len(ps) == 0, fmt.Sprintf("follower %+v, want flat", ps)
			}
			return len(ps) == 1 && ps[0].Side == side && ps[0].Volume == volume, fmt.Sprintf("follower %+v, want %v %v", ps, side, volume)
		}
	}
	c.masterOpen(1, "EURUSD", broker.Buy, 0.5, 0, 0)
	c.eventually("buy copied", 30*time.Second, holds(broker.Buy, 0.5))

	must(t, c.sim.SetFaults(ctx, f, broker.Faults{TimeoutRate: 1}))
	b := c.masterOpen(1, "EURUSD", broker.Sell, 0.5, 0, 0)
	c.eventually("net zero: the position closed (outcome unknown)", 30*time.Second, holds(0, 0))
	must(t, c.sim.SetFaults(ctx, f, broker.Faults{}))

	must(t, c.sim.MasterClose(ctx, "m1", b.Ticket, 0))
	c.eventually("the buy's share opened again", 30*time.Second, holds(broker.Buy, 0.5))
}
