package actors_test

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/snapcopier/copier/broker"
)

// TestRatioSizingUsesTheMastersBalanceAfterItsTrades: a balance-ratio link, master and
// follower at 100,000 when the node reads them. The master then loses about half its
// balance on a trade the link does not copy (an excluded magic), so nothing reconciles;
// its next trade is copied at the ratio of the balances after that loss (about 2 lots for
// 1), which the feed's events carry. Before, the copy was sized on the start's reading
// (1 lot) until the next periodic repair.
func TestRatioSizingUsesTheMastersBalanceAfterItsTrades(t *testing.T) {
	c := newCluster(t, 1, 1)
	ctx := context.Background()
	_, err := c.db.Pool.Exec(ctx, `UPDATE copy_links SET settings = $1`,
		`{"sizing":{"mode":"balance_ratio","multiplier":1},"filters":{"exclude_magics":["5"]}}`)
	must(t, err)
	c.start("n1", 10, nil)
	follower := c.followers[0]
	c.awaitIdle("follower copying", 0, c.followers)
	mark := c.signals.Len()

	uncopied, err := c.sim.MasterOpen(ctx, "m1", broker.MasterOpenRequest{Symbol: "EURUSD", Side: broker.Buy, Volume: 10, Magic: 5})
	must(t, err)
	c.sim.SetPrice("EURUSD", uncopied.OpenPrice-0.05) // 10 lots × 100,000 × 0.05: about 50,000 lost
	must(t, c.sim.MasterClose(ctx, "m1", uncopied.Ticket, 0))
	c.masterOpen(1, "EURUSD", broker.Buy, 1, 0, 0)

	login := fmt.Sprintf("f%d", follower)
	var copied broker.Position
	c.eventually("the master's trade copied", 30*time.Second, func() (bool, string) {
		ps, err := c.sim.AccountPositions(ctx, login)
		if err != nil || len(ps) == 0 {
			return false, fmt.Sprintf("follower positions %v (%v)", ps, err)
		}
		copied = ps[0]
		return true, ""
	})
	balance := func(login string) float64 {
		t.Helper()
		sess, err := c.sim.Connect(ctx, broker.Credentials{Login: login})
		must(t, err)
		defer func() { _ = sess.Close() }()
		info, err := sess.Account(ctx)
		must(t, err)
		return info.Balance
	}
	// Neither balance changed since the close: the copy's open moved only the equity.
	want := balance(login) / balance("m1")
	if want < 1.8 {
		t.Fatalf("the master's loss left the ratio at %.3f: the test proves nothing", want)
	}
	if math.Abs(copied.Volume-want) > 0.011 {
		t.Fatalf("a copy of 1 lot is %v lots, want %.3f (the balances after the master's loss)", copied.Volume, want)
	}
	if n := c.reconcilesSince(mark)[follower]; len(n) > 0 {
		t.Fatalf("the follower reconciled (%v): the sizing must come from the events alone", n)
	}
}
