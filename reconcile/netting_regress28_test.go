package reconcile

import (
	"math"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/snapcopier/copier/broker"
)

// Regression tests of issue #28: four planner defects on netting followers, each with the
// issue's minimal input (EURUSD min and step 0.01 unless said, magic 1001).

// TestNettingUnknownRatioRecordedWithTheTrade (defect 1): a master of unknown ratio that
// the position cannot hold before the plan's trade is recorded in the same plan, at the
// ratio the position the trade leaves gives it, so that planning again yields nothing.
func TestNettingUnknownRatioRecordedWithTheTrade(t *testing.T) {
	in := testInput(broker.Netting)
	in.Link.Settings.Sizing.Multiplier = 0.1
	f, load := unknownRatioState(&in, 0.05, 0.01, 0.02, 0.25)
	res := Plan(in)
	// 501 carries 0.0125 (0.01 on the step): the 0.02 position is reduced by 0.01, and 502
	// shares the 0.0025 the remaining 0.01 holds beyond 501 (ratio 0.25).
	want := []Action{{Kind: PartialClose, Reason: ReasonNetTarget, FollowerTicket: 7001, Symbol: "EURUSD", Side: broker.Buy, Volume: 0.01,
		Track: []Tracked{{501, 0.25}, {502, 0.25}}}}
	if len(res.Actions) != 1 || len(res.Track) != 0 || !reflect.DeepEqual(roundRatios(res.Actions), want) {
		t.Fatalf("plan 1: actions %v (tracking %v), track %v\nwant %v (tracking %v)", res.Actions, tracks(res), res.Track, want, want[0].Track)
	}
	f.execute(1, res, now())
	load()
	if res := Plan(in); !res.Converged() {
		t.Fatalf("plan 2 after plan 1 applied: actions %v, track %v, untrack %v; want nothing to do", res.Actions, res.Track, res.Untrack)
	}
}

// unknownRatioState is the state of defects 1 and 4: EURUSD masters 501 buy and 502 sell
// (younger), the link's position #7001 buy (marked mc501) carrying 501 at ratio501 and 502
// of unknown ratio. It returns the follower and a function that loads its state into in.
func unknownRatioState(in *Input, buy501, sell502, position, ratio501 float64) (*follower, func()) {
	in.Master.Positions = []broker.Position{mpos(501, "EURUSD", broker.Buy, buy501, time.Hour), mpos(502, "EURUSD", broker.Sell, sell502, time.Minute)}
	f := &follower{mode: broker.Netting, positions: []broker.Position{netPos(7001, broker.Buy, position, 501)}}
	f.ticketMap = []TicketMapEntry{
		{LinkID: 1, MasterTicket: 501, FollowerTicket: 7001, Volume: ratio501},
		{LinkID: 1, MasterTicket: 502, FollowerTicket: 7001}, // ratio unknown
	}
	load := func() { in.Follower.Positions, in.TicketMap = slices.Clone(f.positions), slices.Clone(f.ticketMap) }
	load()
	return f, load
}

// twoSymbolInput is testInput with GBPUSD on both accounts, the follower's at a 0.1 lot
// minimum.
func twoSymbolInput(mode broker.AccountMode) Input {
	in := testInput(mode)
	gbp := fx("GBPUSD")
	in.Master.Symbols["GBPUSD"] = gbp
	gbp.MinLot = 0.1
	in.Follower.Symbols["GBPUSD"] = gbp
	return in
}

// TestNettingMaxOpenCopiesSkipsOnlyCopied (defect 2): a master position that
// max_lots_per_symbol skips does not take a max_open_copies slot, on either mode and on
// either path.
func TestNettingMaxOpenCopiesSkipsOnlyCopied(t *testing.T) {
	for _, mode := range []broker.AccountMode{broker.Hedging, broker.Netting} {
		t.Run(mode.String(), func(t *testing.T) {
			in := twoSymbolInput(mode)
			in.Link.Settings.Sizing.ForceMin = true
			in.Link.Settings.Limits = Limits{MaxOpenCopies: 1, MaxLotsPerSymbol: 0.05}
			eur := mpos(502, "EURUSD", broker.Buy, 0.01, time.Second)
			in.Master.Positions = []broker.Position{mpos(501, "GBPUSD", broker.Buy, 0.01, 2*time.Second), eur}
			for name, res := range map[string]Result{"Plan": Plan(in), "PlanEvent": PlanEvent(broker.Event{Kind: broker.Opened, Position: eur}, in)} {
				if len(res.Actions) != 1 || res.Actions[0].Kind != Open || res.Actions[0].MasterTicket != 502 || res.Actions[0].Volume != 0.01 {
					t.Errorf("%s: actions %v, skips %v; want EURUSD 0.01 opened for 502", name, res.Actions, res.Skipped)
				}
				if slices.Contains(skipReasons(res), SkipMaxOpenCopies) {
					t.Errorf("%s: skips %v; no copy is open, max_open_copies cannot be reached", name, res.Skipped)
				}
			}
			if got := skipReasons(Plan(in)); !reflect.DeepEqual(got, []SkipReason{SkipMaxLotsPerSymbol}) {
				t.Errorf("Plan skips %v; want 501's max_lots_per_symbol", got)
			}
		})
	}
}

// TestNettingLimitBelowStepSkips (defect 3, and README, limits): when max_lots_per_symbol
// rounded down to the lot step is below the minimum, no copy fits: a new master position is
// skipped (max_lots_per_symbol), with or without force_min, on both modes, and nothing is
// tracked.
func TestNettingLimitBelowStepSkips(t *testing.T) {
	cases := []struct {
		name           string
		min, step, vol float64
		forceMin       bool
	}{
		{name: "force_min, limit below the step", min: 0.1, step: 0.1, vol: 0.01, forceMin: true}, // the input
		{name: "force_min, limit on the step", min: 0.1, step: 0.01, vol: 0.02, forceMin: true},
		{name: "without force_min", min: 0.1, step: 0.1, vol: 0.2},
	}
	for _, tc := range cases {
		for _, mode := range []broker.AccountMode{broker.Hedging, broker.Netting} {
			t.Run(tc.name+"/"+mode.String(), func(t *testing.T) {
				in := testInput(mode)
				s := in.Follower.Symbols["EURUSD"]
				s.MinLot, s.LotStep = tc.min, tc.step
				in.Follower.Symbols["EURUSD"] = s
				in.Link.Settings.Sizing.ForceMin = tc.forceMin
				in.Link.Settings.Limits.MaxLotsPerSymbol = 0.05
				in.Master.Positions = []broker.Position{mpos(501, "EURUSD", broker.Buy, tc.vol, time.Second)}
				res := Plan(in)
				if len(res.Actions) != 0 || len(res.Track) != 0 || !reflect.DeepEqual(skipReasons(res), []SkipReason{SkipMaxLotsPerSymbol}) {
					t.Fatalf("actions %v, track %v, skips %v; want no order, nothing tracked and a max_lots_per_symbol skip", res.Actions, res.Track, res.Skipped)
				}
			})
		}
	}
}

// TestNettingLostWriteAfterForceMinKeepsPosition (defect 4): force_min raised the net to
// the minimum and the map write was lost. 502, of unknown ratio, is on the other side of
// what the position holds beyond 501: it holds nothing of it, and nothing is traded.
func TestNettingLostWriteAfterForceMinKeepsPosition(t *testing.T) {
	in := testInput(broker.Netting)
	in.Link.Settings.Sizing = Sizing{Mode: SizeFixedLot, FixedLot: 0.01, MinLot: 0.02, ForceMin: true, AlignContractSize: true}
	f, load := unknownRatioState(&in, 0.03, 0.01, 0.01, 0.5)
	res := Plan(in)
	// 501 carries 0.015; 502 shares the 0.005 sell the 0.01 holds beyond it: net 0.01,
	// raised to the 0.02 minimum.
	if len(res.Actions) != 1 || res.Actions[0].Kind != Open || res.Actions[0].Side != broker.Buy || res.Actions[0].Volume != 0.01 {
		t.Fatalf("plan 1: %v; want open buy 0.01", res.Actions)
	}
	f.executeLost(res, now())
	load()
	if res := Plan(in); len(res.Actions) != 0 {
		t.Fatalf("plan 2 after the lost write: %v (track %v); want no trade: the 0.02 position is the masters' net", res.Actions, res.Track)
	}
	// Any ratio of 502 from 0 to 0.5 keeps the position.
	for _, r := range []float64{0, 0.25, 0.5} {
		in.TicketMap[1].Volume = r
		if res := Plan(in); len(res.Actions) != 0 {
			t.Fatalf("502 at ratio %v: %v; want no trade", r, res.Actions)
		}
	}
}

// tracks lists what each action of a plan tracks.
func tracks(r Result) [][]Tracked {
	out := make([][]Tracked, len(r.Actions))
	for i, a := range r.Actions {
		out[i] = a.Track
	}
	return out
}

// roundRatios is actions with their tracked ratios rounded to 1e-9 (0.0025 / 0.01 is not
// 0.25 in binary).
func roundRatios(actions []Action) []Action {
	out := slices.Clone(actions)
	for i := range out {
		out[i].Track = slices.Clone(out[i].Track)
		for k := range out[i].Track {
			out[i].Track[k].Ratio = math.Round(out[i].Track[k].Ratio*1e9) / 1e9
		}
	}
	return out
}

// TestNettingEventPathAdmitsAsPlan (found by the extended TestPlannerModel): a close frees
// a max_open_copies slot; the event path gives it to the master position Plan gives it to
// (the oldest waiting, here on another symbol), not to a younger one on the event's symbol.
// Before, a lost write of the event's plan made the repair sell what the event had bought.
func TestNettingEventPathAdmitsAsPlan(t *testing.T) {
	in := twoSymbolInput(broker.Netting)
	gbp := in.Follower.Symbols["GBPUSD"]
	gbp.MinLot = 0.01
	in.Follower.Symbols["GBPUSD"] = gbp
	in.Link.Settings.Limits.MaxOpenCopies = 1
	closed := mpos(501, "EURUSD", broker.Buy, 0.1, 30*time.Second)
	in.Master.Positions = []broker.Position{closed, mpos(502, "GBPUSD", broker.Buy, 0.1, 20*time.Second), mpos(503, "EURUSD", broker.Buy, 0.2, 10*time.Second)}
	in.Follower.Positions = []broker.Position{netPos(7001, broker.Buy, 0.1, 501)}
	in.TicketMap = []TicketMapEntry{{LinkID: 1, MasterTicket: 501, FollowerTicket: 7001, Volume: 1}}
	ev := PlanEvent(broker.Event{Kind: broker.Closed, Position: closed}, in)
	in.Master.Positions = in.Master.Positions[1:]
	full := Plan(in)
	var onEUR []Action
	for _, a := range full.Actions {
		if a.Symbol == "EURUSD" {
			a.MasterTicket = closed.Ticket // the event path names its master
			onEUR = append(onEUR, a)
		}
	}
	if got := kinds(ev); !reflect.DeepEqual(got, []ActionKind{Close}) || !reflect.DeepEqual(ev.Actions, onEUR) {
		t.Fatalf("event path %v (skips %v)\nPlan on EURUSD %v; want the close of #7001 on both: 502 is older than 503 and takes the slot", ev.Actions, ev.Skipped, onEUR)
	}
	if !reflect.DeepEqual(skipReasons(ev), []SkipReason{SkipMaxOpenCopies}) {
		t.Fatalf("event path skips %v; want 503's max_open_copies", ev.Skipped)
	}
}
