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

// TestPlanDoesNotMoveStopsThePriceHasPassed: a master's change of its stops is not carried
// to a copy when the follower's price has passed the stop it would get (the trade server
// would refuse the change, at every reconcile): the copy keeps its stops and the skip says
// why (stop_passed); a change the price allows is carried. Hedging and netting followers.
func TestPlanDoesNotMoveStopsThePriceHasPassed(t *testing.T) {
	for _, mode := range []broker.AccountMode{broker.Hedging, broker.Netting} {
		for _, tc := range []struct {
			sl     float64 // the master's new stop-loss (Bid 1.10000)
			modify bool
		}{{1.10002, false}, {1.10000, false}, {1.09990, true}} {
			in := testInput(mode)
			in.Follower.Symbols = specs(fx("EURUSD"))
			m := mpos(501, "EURUSD", broker.Buy, 0.4, time.Hour)
			m.SL = tc.sl
			in.Master.Positions = []broker.Position{m}
			c := copyOf(7001, 501, "EURUSD", broker.Buy, 0.4)
			c.SL = 1.09000
			in.Follower.Positions = []broker.Position{c}
			in.TicketMap = []TicketMapEntry{{LinkID: 1, MasterTicket: 501, FollowerTicket: 7001, Volume: 1}}
			res := Plan(in)
			if tc.modify {
				if !reflect.DeepEqual(kinds(res), []ActionKind{Modify}) || res.Actions[0].SL != tc.sl || len(res.Skipped) != 0 {
					t.Errorf("%v, master SL %v: actions %v, skips %v; want the modify", mode, tc.sl, res.Actions, res.Skipped)
				}
				continue
			}
			if len(res.Actions) != 0 || !reflect.DeepEqual(skipReasons(res), []SkipReason{SkipStopPassed}) ||
				res.Skipped[0].MasterTicket != 501 || res.Skipped[0].FollowerTicket != 7001 {
				t.Errorf("%v, master SL %v: actions %v, skips %+v; want only a stop_passed skip of 501's copy", mode, tc.sl, res.Actions, res.Skipped)
			}
		}
	}
}
