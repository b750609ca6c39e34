package reconcile

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/snapcopier/copier/broker"
)

// Regression tests of issue #28: four planner defects on netting followers, each with the
// issue's minimal input (EURUSD min and step 0.01 unless said, magic 1001).

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
