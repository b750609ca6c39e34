package actors_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/snapcopier/copier/actors"
	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/broker/sim"
	"github.com/snapcopier/copier/internal/testwait"
	"github.com/snapcopier/copier/reconcile"
	"github.com/snapcopier/copier/store"
	"github.com/snapcopier/copier/store/storetest"
)

// TestAPassedStopIsSkippedAndJournalled: the master holds a buy whose stop-loss the market
// has since passed (the trade server triggers no stops here, so it stays open); a follower
// linked then does not send its copy to a refusal (invalid stops) but skips it: its journal
// says why (result "skipped", stop_passed), once, the node counts it, and no order of the
// follower reaches the trade server. The master's next trade is copied as usual.
func TestAPassedStopIsSkippedAndJournalled(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := storetest.NewDB(t)
	s := sim.New(sim.Config{Seed: 7})
	provision(t, s, db, 1, "m1", store.RoleMaster)
	signals := &testwait.Log[actors.Signal]{}
	node := startOwn(t, db, s, signals, nil)

	s.SetPrice("EURUSD", 1.10000)
	passed, err := s.MasterOpen(ctx, "m1", broker.MasterOpenRequest{Symbol: "EURUSD", Side: broker.Buy, Volume: 0.1, SL: 1.09000, Magic: 1})
	must(t, err)
	s.SetPrice("EURUSD", 1.05000) // 400 pips below the stop-loss

	provision(t, s, db, 1001, "f1", store.RoleFollower)
	_, err = store.CreateLink(ctx, db.Pool, store.Link{MasterID: 1, FollowerID: 1001, Enabled: true, Magic: 7001, Settings: []byte(`{}`)})
	must(t, err)
	awaitIdleReconcile(t, signals, 1001)
	_, err = s.MasterOpen(ctx, "m1", broker.MasterOpenRequest{Symbol: "EURUSD", Side: broker.Buy, Volume: 0.1, Magic: 1})
	must(t, err)
	testwait.For(t, "the next trade copied", 30*time.Second, func() (bool, string) {
		ps, err := s.AccountPositions(ctx, "f1")
		if err != nil || len(ps) != 1 {
			return false, fmt.Sprintf("follower positions: %d (%v)", len(ps), err)
		}
		return true, ""
	})

	log, err := s.OrderLog(ctx, 0, 10_000)
	must(t, err)
	var orders []broker.OrderLogEntry
	for _, e := range log {
		if e.Login == "f1" {
			orders = append(orders, e)
		}
	}
	if len(orders) != 1 || !orders[0].Executed {
		t.Fatalf("the follower's orders at the trade server: %+v; want only the second trade's copy", orders)
	}
	var skips []actors.JournalEntry
	for _, a := range node.Snapshot().Accounts {
		for _, j := range a.Journal {
			if a.ID == 1001 && j.Result == "skipped" {
				skips = append(skips, j)
			}
		}
	}
	if len(skips) != 1 || skips[0].Skip != reconcile.SkipStopPassed || skips[0].MasterTicket != passed.Ticket {
		t.Fatalf("journalled skips %+v; want one stop_passed of master ticket %d", skips, passed.Ticket)
	}
	if n := node.Metrics().Skips(reconcile.SkipStopPassed); n != 1 {
		t.Fatalf("stop_passed skips counted: %d, want 1", n)
	}
}
