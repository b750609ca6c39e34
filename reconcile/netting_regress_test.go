package reconcile

import (
	"math"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/snapcopier/copier/broker"
)

// Regression tests of issue #16: planner defects on netting followers.

// minTenth makes the follower's EURUSD 0.1 lots minimum on a 0.01 step.
func minTenth(in *Input) {
	s := in.Follower.Symbols["EURUSD"]
	s.MinLot = 0.1
	in.Follower.Symbols["EURUSD"] = s
}

// TestNettingForceMinRespectsLotsPerSymbol: force_min does not raise a netting target
// above max_lots_per_symbol; both modes skip the copy.
func TestNettingForceMinRespectsLotsPerSymbol(t *testing.T) {
	for _, mode := range []broker.AccountMode{broker.Hedging, broker.Netting} {
		t.Run(mode.String(), func(t *testing.T) {
			in := testInput(mode)
			minTenth(&in)
			in.Link.Settings.Sizing.ForceMin = true
			in.Link.Settings.Limits.MaxLotsPerSymbol = 0.05
			in.Master.Positions = []broker.Position{mpos(501, "EURUSD", broker.Buy, 0.02, time.Second)}
			res := Plan(in)
			if len(res.Actions) != 0 || len(res.Track) != 0 || !slices.Contains(skipReasons(res), SkipMaxLotsPerSymbol) {
				t.Fatalf("actions %v, track %v, skips %v; want no order, nothing tracked and a max_lots_per_symbol skip", res.Actions, res.Track, res.Skipped)
			}
		})
	}
}

// TestNettingUnsizableEntryConverges: an entry of unknown ratio on a flat net whose master
// sizes below the minimum is not tracked again and again.
func TestNettingUnsizableEntryConverges(t *testing.T) {
	in := testInput(broker.Netting)
	in.Link.Settings.Sizing.Multiplier = 0.1
	in.Master.Positions = []broker.Position{mpos(501, "EURUSD", broker.Buy, 0.01, time.Hour)}
	in.TicketMap = []TicketMapEntry{{LinkID: 1, MasterTicket: 501}}
	if res := Plan(in); !res.Converged() {
		t.Fatalf("not converged: actions %v, track %v, untrack %v", res.Actions, res.Track, res.Untrack)
	}
}

// TestNettingRepairAfterUnknownOpenKeepsPosition: the net flips (close buy 0.5, open sell
// 0.3); the close is recorded, the open's outcome is unknown but it executed. The repair
// re-points the map at the new position instead of closing it.
func TestNettingRepairAfterUnknownOpenKeepsPosition(t *testing.T) {
	f := &follower{mode: broker.Netting, positions: []broker.Position{netPos(7001, broker.Buy, 0.5, 501)}}
	f.ticketMap = []TicketMapEntry{{LinkID: 1, MasterTicket: 501, FollowerTicket: 7001, Volume: 1}}
	in := testInput(broker.Netting)
	in.Master.Positions = []broker.Position{mpos(501, "EURUSD", broker.Buy, 0.5, time.Hour), mpos(502, "EURUSD", broker.Sell, 0.8, time.Second)}
	view := func() Input {
		in.Follower.Positions, in.TicketMap = slices.Clone(f.positions), slices.Clone(f.ticketMap)
		return in
	}
	res := Plan(view())
	if got := kinds(res); !reflect.DeepEqual(got, []ActionKind{Close, Open}) {
		t.Fatalf("flip: %v", res.Actions)
	}
	f.execute(1, Result{Actions: res.Actions[:1]}, now()) // the close, recorded
	f.do(res.Actions[1], now())                           // the open: executed, outcome unknown
	repair := Plan(view())
	if len(repair.Actions) != 0 {
		t.Fatalf("repair %v (skips %v); want no order: the sell 0.3 is the masters' net", repair.Actions, repair.Skipped)
	}
	f.execute(1, repair, now())
	if res := Plan(view()); !res.Converged() || len(f.positions) != 1 || f.positions[0].Volume != 0.3 || f.positions[0].Side != broker.Sell {
		t.Fatalf("after repair: %v, follower %v, map %v", res, f.positions, f.ticketMap)
	}
}

// TestNettingAdoptionKeepsExistingPosition: a lost ticket-map write is repaired by
// adopting the position as it is: with the copy's own stop for risk_percent, and with
// only the part of the position that other carried masters do not explain.
func TestNettingAdoptionKeepsExistingPosition(t *testing.T) {
	t.Run("copy's own stop", func(t *testing.T) {
		f := &follower{mode: broker.Netting}
		in := testInput(broker.Netting)
		in.Follower.Info.Balance, in.Follower.Info.Equity = 10_000, 10_000
		in.Link.Settings.Sizing = Sizing{Mode: SizeRiskPercent, RiskPercent: 1}
		in.Link.Settings.Stops = Stops{Mode: StopsFixed, SLPoints: 150}
		m := mpos(501, "EURUSD", broker.Buy, 1, time.Second)
		m.SL = m.OpenPrice - 0.00500
		in.Master.Positions = []broker.Position{m}
		res := Plan(in)
		if len(res.Actions) != 1 || res.Actions[0].Volume != 0.66 {
			t.Fatalf("open %v", res.Actions)
		}
		f.executeLost(res, now())
		in.Follower.Positions = slices.Clone(f.positions)
		repair := Plan(in)
		if len(repair.Actions) != 0 || len(repair.Track) != 1 {
			t.Fatalf("repair %v, track %v; want the 0.66 adopted as it is", repair.Actions, repair.Track)
		}
	})
	t.Run("flat net sizes like a new copy", func(t *testing.T) {
		in := testInput(broker.Netting)
		in.Follower.Info.Balance, in.Follower.Info.Equity = 10_000, 10_000
		in.Link.Settings.Sizing = Sizing{Mode: SizeRiskPercent, RiskPercent: 1}
		in.Link.Settings.Stops = Stops{Mode: StopsFixed, SLPoints: 150}
		m := mpos(501, "EURUSD", broker.Buy, 1, time.Second)
		m.SL = m.OpenPrice - 0.00500
		in.Master.Positions = []broker.Position{m}
		in.TicketMap = []TicketMapEntry{{LinkID: 1, MasterTicket: 501}} // ratio unknown, net flat
		res := Plan(in)
		if len(res.Actions) != 1 || res.Actions[0].Volume != 0.66 {
			t.Fatalf("open %v; want 0.66 lots, sized with the copy's 150-point stop", res.Actions)
		}
	})
	t.Run("other carried masters", func(t *testing.T) {
		in := testInput(broker.Netting)
		in.Link.Settings.Sizing = Sizing{Mode: SizeRiskPercent, RiskPercent: 1}
		a := mpos(501, "EURUSD", broker.Buy, 0.5, time.Minute)
		a.SL = a.OpenPrice - 0.00500
		b := mpos(502, "EURUSD", broker.Buy, 0.3, time.Hour) // no stop: risk sizing fails
		in.Master.Positions = []broker.Position{a, b}
		in.Follower.Positions = []broker.Position{netPos(7001, broker.Buy, 0.8, 502)}
		in.TicketMap = []TicketMapEntry{{LinkID: 1, MasterTicket: 501, FollowerTicket: 7001, Volume: 1}}
		res := Plan(in)
		if len(res.Actions) != 0 || len(res.Track) != 1 || res.Track[0].MasterTicket != 502 || res.Track[0].FollowerTicket != 7001 ||
			math.Abs(res.Track[0].Volume-1) > 1e-9 {
			t.Fatalf("actions %v, track %v; want 502 adopted with the 0.3 the position holds beyond 501", res.Actions, res.Track)
		}
	})
}

// TestNettingAdjustBelowMinTracksShare: a new master position whose addition is below the
// minimum is carried by the position as it is (tracked), not left out of the map while it
// counts toward the target.
func TestNettingAdjustBelowMinTracksShare(t *testing.T) {
	in := testInput(broker.Netting)
	minTenth(&in)
	in.Link.Settings.Sizing.MaxLot = 1.05
	in.Master.Positions = []broker.Position{mpos(501, "EURUSD", broker.Buy, 1, time.Hour), mpos(502, "EURUSD", broker.Buy, 0.2, time.Second)}
	in.Follower.Positions = []broker.Position{netPos(7001, broker.Buy, 1, 501)}
	in.TicketMap = []TicketMapEntry{{LinkID: 1, MasterTicket: 501, FollowerTicket: 7001, Volume: 1}}
	res := Plan(in)
	want := []TicketMapEntry{{LinkID: 1, MasterTicket: 502, FollowerTicket: 7001, Volume: 1}}
	if len(res.Actions) != 0 || !reflect.DeepEqual(skipReasons(res), []SkipReason{SkipAdjustBelowMin}) || !reflect.DeepEqual(res.Track, want) {
		t.Fatalf("actions %v, skips %v, track %v", res.Actions, res.Skipped, res.Track)
	}
	in.TicketMap = append(in.TicketMap, want...)
	if res := Plan(in); !res.Converged() {
		t.Fatalf("not converged: %v", res)
	}
}

// TestPlanEventNettingKeepsSymbolSkips: the event path plans the event's symbol as a
// whole, and reports the skips of every master position on it.
func TestPlanEventNettingKeepsSymbolSkips(t *testing.T) {
	in := testInput(broker.Netting)
	in.Master.Positions = []broker.Position{mpos(501, "EURUSD", broker.Buy, 0.5, time.Hour), mpos(502, "EURUSD", broker.Buy, 0.3, time.Hour)}
	in.Follower.Positions = []broker.Position{netPos(7001, broker.Buy, 0.5, 501)}
	in.TicketMap = []TicketMapEntry{
		{LinkID: 1, MasterTicket: 501, FollowerTicket: 7001, Volume: 1},
		{LinkID: 1, MasterTicket: 502, FollowerTicket: 6999, Volume: 1}, // closed by the user
	}
	ev := broker.Event{Kind: broker.PartiallyClosed, Position: mpos(501, "EURUSD", broker.Buy, 0.4, time.Hour)}
	res := PlanEvent(ev, in)
	if !reflect.DeepEqual(skipReasons(res), []SkipReason{SkipCopyClosed}) {
		t.Fatalf("skips %v; want the copy_closed of 502", res.Skipped)
	}
}

// TestNettingReverseToggleFlipsNet pins the documented difference (README, reverse): a
// netting position is the net of its master positions at the current settings, so
// switching reverse on flips it; a hedging copy keeps its side.
func TestNettingReverseToggleFlipsNet(t *testing.T) {
	for _, mode := range []broker.AccountMode{broker.Hedging, broker.Netting} {
		in := testInput(mode)
		in.Link.Settings.Reverse = true
		in.Master.Positions = []broker.Position{mpos(501, "EURUSD", broker.Buy, 0.5, time.Hour)}
		in.Follower.Positions = []broker.Position{netPos(7001, broker.Buy, 0.5, 501)}
		in.TicketMap = []TicketMapEntry{{LinkID: 1, MasterTicket: 501, FollowerTicket: 7001, Volume: 1}}
		res := Plan(in)
		want := []ActionKind{}
		if mode == broker.Netting {
			want = []ActionKind{Close, Open}
		}
		if got := kinds(res); !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: %v, want %v", mode, res.Actions, want)
		}
	}
}

// Found by the model-based test (model_test.go).

// TestNettingStaleEntryRepointed: an entry left at 0 by a lost write while the link holds
// a position is tracked at the position, so that a user's close of the position ends the
// copy instead of reopening it.
func TestNettingStaleEntryRepointed(t *testing.T) {
	in := testInput(broker.Netting)
	in.Master.Positions = []broker.Position{mpos(501, "EURUSD", broker.Buy, 0.5, time.Second)}
	f := &follower{mode: broker.Netting, positions: []broker.Position{netPos(7001, broker.Buy, 0.5, 501)}}
	f.ticketMap = []TicketMapEntry{{LinkID: 1, MasterTicket: 501, Volume: 1}} // the open's write was lost
	in.Follower.Positions, in.TicketMap = f.positions, f.ticketMap
	res := Plan(in)
	want := []TicketMapEntry{{LinkID: 1, MasterTicket: 501, FollowerTicket: 7001, Volume: 1}}
	if len(res.Actions) != 0 || !reflect.DeepEqual(res.Track, want) {
		t.Fatalf("actions %v, track %v; want the entry re-pointed", res.Actions, res.Track)
	}
	f.execute(1, res, now())
	f.positions = nil // the user closes the position
	in.Follower.Positions, in.TicketMap = f.positions, f.ticketMap
	if res := Plan(in); len(res.Actions) != 0 || !reflect.DeepEqual(skipReasons(res), []SkipReason{SkipCopyClosed}) {
		t.Fatalf("after the user's close: %v, skips %v", res.Actions, res.Skipped)
	}
}

// TestNettingLostWriteCarriesMarkedEntries: the link closed its position and opened a new
// one, and both writes were lost: the new position's marker names a master whose entry
// points at the old position, so every master carried there is carried by the new one.
func TestNettingLostWriteCarriesMarkedEntries(t *testing.T) {
	in := testInput(broker.Netting)
	in.Master.Positions = []broker.Position{mpos(501, "EURUSD", broker.Buy, 0.5, time.Hour), mpos(502, "EURUSD", broker.Buy, 0.3, time.Minute)}
	in.Follower.Positions = []broker.Position{netPos(7002, broker.Buy, 0.8, 501)}
	in.TicketMap = []TicketMapEntry{
		{LinkID: 1, MasterTicket: 501, FollowerTicket: 7001, Volume: 1},
		{LinkID: 1, MasterTicket: 502, FollowerTicket: 7001, Volume: 1},
	}
	res := Plan(in)
	want := []TicketMapEntry{{LinkID: 1, MasterTicket: 501, FollowerTicket: 7002, Volume: 1}, {LinkID: 1, MasterTicket: 502, FollowerTicket: 7002, Volume: 1}}
	if len(res.Actions) != 0 || !reflect.DeepEqual(res.Track, want) {
		t.Fatalf("actions %v, track %v, skips %v; want both re-pointed, no order", res.Actions, res.Track, res.Skipped)
	}
}

// TestNettingUnknownCloseKeepsCopies: the net of two master positions is 0 and the close's
// outcome is unknown. With the action's UnknownOutcomeChanges written, the copies stay
// copied whether the close executed or not: when one master closes, the other's share is
// opened (executed), or the close is planned again (not executed).
func TestNettingUnknownCloseKeepsCopies(t *testing.T) {
	in := testInput(broker.Netting)
	a, b := mpos(501, "EURUSD", broker.Buy, 0.5, time.Hour), mpos(502, "EURUSD", broker.Sell, 0.5, time.Second)
	in.Master.Positions = []broker.Position{a, b}
	for _, executed := range []bool{true, false} {
		f := &follower{mode: broker.Netting, positions: []broker.Position{netPos(7001, broker.Buy, 0.5, 501)}}
		f.ticketMap = []TicketMapEntry{{LinkID: 1, MasterTicket: 501, FollowerTicket: 7001, Volume: 1}}
		in.Follower.Positions, in.TicketMap = f.positions, f.ticketMap
		res := Plan(in)
		if got := kinds(res); !reflect.DeepEqual(got, []ActionKind{Close}) {
			t.Fatalf("net zero: %v", res.Actions)
		}
		if executed {
			f.do(res.Actions[0], now())
		}
		track, untrack := res.Actions[0].UnknownOutcomeChanges(1, broker.Netting)
		f.ticketMap = applyMap(f.ticketMap, track, untrack)
		f.execute(1, Result{Track: res.Track, Untrack: res.Untrack}, now())
		in.Follower.Positions, in.TicketMap = slices.Clone(f.positions), slices.Clone(f.ticketMap)
		if !executed {
			if got := kinds(Plan(in)); !reflect.DeepEqual(got, []ActionKind{Close}) {
				t.Fatalf("close not executed: replan %v", got)
			}
			continue
		}
		in.Master.Positions = []broker.Position{a} // b closes
		res = Plan(in)
		in.Master.Positions = []broker.Position{a, b}
		if len(res.Actions) != 1 || res.Actions[0].Kind != Open || res.Actions[0].Volume != 0.5 {
			t.Fatalf("after b closed: %v, skips %v; want a's 0.5 opened", res.Actions, res.Skipped)
		}
	}
	if track, untrack := (Action{Kind: Open, Track: []Tracked{{501, 1}}}).UnknownOutcomeChanges(1, broker.Hedging); track != nil || untrack != nil {
		t.Fatalf("hedging: %v %v; want none (the marker finds an executed open)", track, untrack)
	}
}
