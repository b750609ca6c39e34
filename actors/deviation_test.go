package actors_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
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

// shiftedClock is time.Now moved forward by what the test adds.
type shiftedClock struct{ by atomic.Int64 }

func (c *shiftedClock) now() time.Time      { return time.Now().Add(time.Duration(c.by.Load())) }
func (c *shiftedClock) add(d time.Duration) { c.by.Add(int64(d)) }

// TestPriceDeviationIsCheckedAgainstTheCurrentQuote: a link bounds the price deviation of
// late copies (30 points). The master trades EURUSD, the follower copies it as EURUSX, a
// second price process. The follower's quotes are read once, at its start; then:
//   - both markets move 1,150 points and the master trades: a timely copy is opened (the
//     start's quote is no price any more; before, every copy was refused against it);
//   - the follower's market moves away while the master's comes back to the start's price,
//     and the master's trade reaches the node 5 s late: the copy is checked against a quote
//     read for it (a reconcile of cause stale_quote) and refused; before, it was checked
//     against the start's quote and opened 2,150 points away;
//   - the follower's market comes back, and a later trade reaches the node late again: the
//     quote read for it lets both late copies open.
func TestPriceDeviationIsCheckedAgainstTheCurrentQuote(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := storetest.NewDB(t)
	var simClock, nodeClock shiftedClock
	flat := func(name string) sim.SymbolConfig {
		return sim.SymbolConfig{Name: name, BaseCurrency: "EUR", QuoteCurrency: "USD", ContractSize: 100000, MinLot: 0.01, MaxLot: 100, LotStep: 0.01,
			Digits: 5, SpreadPoints: 10, Price: 1.085}
	}
	s := sim.New(sim.Config{Seed: 7, Clock: simClock.now, Symbols: []sim.SymbolConfig{flat("EURUSD"), flat("EURUSX")}})
	provision(t, s, db, 1, "m1", store.RoleMaster)
	provision(t, s, db, 1001, "f1", store.RoleFollower)
	settings := reconcile.DefaultSettings()
	settings.Window.MaxDeviationPoints = 30
	settings.Symbols.Pairs = map[string]string{"EURUSD": "EURUSX"}
	raw, err := json.Marshal(settings)
	must(t, err)
	_, err = store.CreateLink(ctx, db.Pool, store.Link{MasterID: 1, FollowerID: 1001, Enabled: true, Magic: 7001, Settings: raw})
	must(t, err)

	signals := &testwait.Log[actors.Signal]{}
	startOwn(t, db, s, signals, nodeClock.now)
	// reconciled waits for a reconcile of the follower started after mark, of cause, to
	// be done with nothing more to do.
	reconciled := func(what string, mark int, cause string) {
		t.Helper()
		signals.Await(t, what, mark, 30*time.Second, func(sigs []actors.Signal) (bool, string) {
			started := false
			for _, sig := range sigs {
				switch {
				case sig.Kind == actors.SignalReconcileStarted && sig.Cause == cause:
					started = true
				case sig.Kind == actors.SignalReconcileDone && started && sig.Idle:
					return true, ""
				}
			}
			return false, "no idle " + cause + " reconcile yet"
		})
	}
	copies := func() []broker.Position {
		t.Helper()
		ps, err := s.AccountPositions(ctx, "f1")
		must(t, err)
		return ps
	}
	masterBuy := func() broker.Position {
		t.Helper()
		p, err := s.MasterOpen(ctx, "m1", broker.MasterOpenRequest{Symbol: "EURUSD", Side: broker.Buy, Volume: 1, Magic: 1})
		must(t, err)
		return p
	}
	reconciled("follower started", 0, "start")

	// A timely copy after the market moved.
	simClock.add(10 * time.Second)
	nodeClock.add(10 * time.Second) // the start's quote is 10 s old
	s.SetPrice("EURUSD", 1.2)
	s.SetPrice("EURUSX", 1.2)
	masterBuy()
	testwait.For(t, "timely copy", 30*time.Second, func() (bool, string) {
		if n := len(copies()); n != 1 {
			return false, fmt.Sprintf("follower positions: %d", n)
		}
		return true, ""
	})

	// A late copy where the follower's market moved away.
	nodeClock.add(5 * time.Second) // master trades reach the node 5 s late
	s.SetPrice("EURUSD", 1.085)    // the start's quote
	s.SetPrice("EURUSX", 1.3)
	mark := signals.Len()
	refused := masterBuy()
	reconciled("late copy checked", mark, "stale_quote")
	if ps := copies(); len(ps) != 1 {
		t.Fatalf("a copy 2,150 points from the master's open price was opened: %+v", ps)
	}

	// Late copies where the follower's market came back.
	nodeClock.add(5 * time.Second) // the last quote is 5 s old
	s.SetPrice("EURUSX", 1.085)
	mark = signals.Len()
	late := masterBuy()
	reconciled("late copies checked", mark, "stale_quote")
	copied := map[int64]bool{}
	for _, p := range copies() {
		if mt, ok := reconcile.ParseMarker(p.Comment); ok {
			copied[mt] = true
		}
	}
	if len(copied) != 3 || !copied[refused.Ticket] || !copied[late.Ticket] {
		t.Fatalf("copied master tickets %v, want the three", copied)
	}
}
