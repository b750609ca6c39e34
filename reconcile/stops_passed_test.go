package reconcile

import (
	"reflect"
	"testing"
	"time"

	"github.com/snapcopier/copier/broker"
)

// TestPlanSkipsCopiesWhoseStopThePriceHasPassed: a copy whose stop-loss or take-profit the
// follower's closing price (Bid for a buy, Ask for a sell; EURUSD quoted 1.10000/1.10010)
// has already reached is skipped as stop_passed instead of being sent to a refusal; a stop
// on the right side, an unknown quote or a stale one (the trade server decides) opens.
func TestPlanSkipsCopiesWhoseStopThePriceHasPassed(t *testing.T) {
	cases := []struct {
		name   string
		side   broker.Side
		sl, tp float64
		edit   func(*Input)
		skip   bool
	}{
		{name: "buy, stop-loss at the Bid", side: broker.Buy, sl: 1.10000, skip: true},
		{name: "buy, stop-loss above the Bid", side: broker.Buy, sl: 1.10005, skip: true},
		{name: "buy, stop-loss a point below the Bid", side: broker.Buy, sl: 1.09999},
		{name: "buy, take-profit at the Bid", side: broker.Buy, tp: 1.10000, skip: true},
		{name: "buy, take-profit between Bid and Ask", side: broker.Buy, tp: 1.10005},
		{name: "sell, stop-loss at the Ask", side: broker.Sell, sl: 1.10010, skip: true},
		{name: "sell, stop-loss a point above the Ask", side: broker.Sell, sl: 1.10011},
		{name: "sell, take-profit at the Ask", side: broker.Sell, tp: 1.10010, skip: true},
		{name: "sell, take-profit below the Bid", side: broker.Sell, tp: 1.09000},
		{name: "reversed: the buy's take-profit is the sell copy's stop-loss", side: broker.Buy, tp: 1.10010, skip: true,
			edit: func(in *Input) { in.Link.Settings.Reverse = true }},
		{name: "fixed stop-loss inside the spread", side: broker.Buy, skip: true,
			edit: func(in *Input) { in.Link.Settings.Stops = Stops{Mode: StopsFixed, SLPoints: 5} }},
		{name: "fixed stop-loss beyond the spread", side: broker.Buy,
			edit: func(in *Input) { in.Link.Settings.Stops = Stops{Mode: StopsFixed, SLPoints: 15} }},
		{name: "stops not copied", side: broker.Buy, sl: 1.10005,
			edit: func(in *Input) { in.Link.Settings.Stops = Stops{Mode: StopsNone} }},
		{name: "quote unknown", side: broker.Buy, sl: 1.10005, edit: func(in *Input) {
			s := in.Follower.Symbols["EURUSD"]
			s.Bid, s.Ask = 0, 0
			in.Follower.Symbols["EURUSD"] = s
		}},
		{name: "quote stale", side: broker.Buy, sl: 1.10005, edit: func(in *Input) { in.Follower.QuotesAt = in.Now.Add(-QuoteMaxAge - time.Second) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := testInput(broker.Hedging)
			in.Follower.Symbols = specs(fx("EURUSD"))
			if tc.edit != nil {
				tc.edit(&in)
			}
			m := mpos(501, "EURUSD", tc.side, 0.4, 5*time.Second)
			m.SL, m.TP = tc.sl, tc.tp
			in.Master.Positions = []broker.Position{m}
			res := Plan(in)
			if tc.skip {
				if len(res.Actions) != 0 || !reflect.DeepEqual(skipReasons(res), []SkipReason{SkipStopPassed}) {
					t.Fatalf("actions %v, skips %v; want only skip stop_passed", res.Actions, res.Skipped)
				}
				return
			}
			if !reflect.DeepEqual(kinds(res), []ActionKind{Open}) || len(res.Skipped) != 0 {
				t.Fatalf("actions %v, skips %v; want one open", res.Actions, res.Skipped)
			}
		})
	}
}
