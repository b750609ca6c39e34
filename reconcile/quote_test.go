package reconcile

import (
	"math"
	"testing"
	"time"

	"github.com/snapcopier/copier/broker"
)

// TestPlanQuoteAge: the follower's quote is its current price only while it is at most
// QuoteMaxAge old. An older one checks no deviation and prices nothing; a late copy under
// a deviation bound waits for a current quote (SkipQuoteStale) instead of opening unchecked.
func TestPlanQuoteAge(t *testing.T) {
	cases := []struct {
		name      string
		quoteAge  time.Duration // 0: undated (read with the plan)
		openedAgo time.Duration
		maxDev    float64
		noQuote   bool
		want      SkipReason // 0: opened
		wantPrice float64    // the Open's expected price
	}{
		{name: "undated quote checks", openedAgo: 5 * time.Second, maxDev: 30, want: SkipPriceDeviation},
		{name: "current quote checks", quoteAge: QuoteMaxAge, openedAgo: 5 * time.Second, maxDev: 30, want: SkipPriceDeviation},
		{name: "current quote within the bound", quoteAge: time.Second, openedAgo: 5 * time.Second, maxDev: 40, wantPrice: 1.10010},
		{name: "stale quote, late copy, bound", quoteAge: QuoteMaxAge + time.Millisecond, openedAgo: 5 * time.Second, maxDev: 30, want: SkipQuoteStale},
		{name: "stale quote, timely copy", quoteAge: time.Hour, openedAgo: QuoteMaxAge, maxDev: 30, wantPrice: 1.09970},
		{name: "stale quote, late copy, no bound", quoteAge: time.Hour, openedAgo: 5 * time.Second, wantPrice: 1.09970},
		{name: "no quote to read, late copy, bound", quoteAge: time.Hour, openedAgo: 5 * time.Second, maxDev: 30, noQuote: true, wantPrice: 1.09970},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := testInput(broker.Hedging)
			if tc.quoteAge > 0 {
				in.Follower.QuotesAt = in.Now.Add(-tc.quoteAge)
			}
			if tc.noQuote {
				s := in.Follower.Symbols["EURUSD"]
				s.Bid, s.Ask = 0, 0
				in.Follower.Symbols["EURUSD"] = s
			}
			in.Link.Settings.Window.MaxDeviationPoints = tc.maxDev
			m := mpos(501, "EURUSD", broker.Buy, 0.4, tc.openedAgo)
			m.OpenPrice = 1.09970 // 40 points below the follower's Ask 1.10010
			in.Master.Positions = []broker.Position{m}
			res := Plan(in)
			if res.NeedsQuote() != (tc.want == SkipQuoteStale) {
				t.Fatalf("NeedsQuote %v; skips %v", res.NeedsQuote(), res.Skipped)
			}
			if !wantOneOpenOrSkip(t, res, tc.want) {
				return
			}
			if p := res.Actions[0].Price; p != tc.wantPrice {
				t.Fatalf("expected price %v, want %v (a stale quote is no price)", p, tc.wantPrice)
			}
		})
	}
}

// TestOpenCarriesTheDeviationBound: an Open under a price-deviation bound carries its
// worst fill, the master's open price plus the bound for a buy copy and minus it for a
// sell copy (a reversed link's copy of a buy), for the trade server to hold at the fill;
// without a bound it carries none.
func TestOpenCarriesTheDeviationBound(t *testing.T) {
	for _, tc := range []struct {
		name    string
		maxDev  float64
		reverse bool
		want    float64
	}{
		{name: "buy copy", maxDev: 30, want: 1.10040},
		{name: "sell copy", maxDev: 30, reverse: true, want: 1.09980},
		{name: "no bound", want: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := testInput(broker.Hedging)
			in.Link.Settings.Window.MaxDeviationPoints = tc.maxDev
			in.Link.Settings.Reverse = tc.reverse
			m := mpos(501, "EURUSD", broker.Buy, 0.4, time.Second)
			m.OpenPrice = 1.10010
			in.Master.Positions = []broker.Position{m}
			res := Plan(in)
			wantOneOpenOrSkip(t, res, 0)
			if got := res.Actions[0].WorstPrice; math.Abs(got-tc.want) > 1e-9 {
				t.Fatalf("worst price %v, want %v", got, tc.want)
			}
			if got := res.Actions[0].OpenRequest(broker.Order{}).WorstPrice; got != res.Actions[0].WorstPrice {
				t.Fatalf("the request carries %v, the action %v", got, res.Actions[0].WorstPrice)
			}
		})
	}
}

// wantOneOpenOrSkip checks a plan of one master position: skipped for want, or (want 0)
// opened by a single Open; it reports whether the plan opened.
func wantOneOpenOrSkip(t *testing.T, res Result, want SkipReason) bool {
	t.Helper()
	if want != 0 {
		if len(res.Actions) != 0 || len(res.Skipped) != 1 || res.Skipped[0].Reason != want {
			t.Fatalf("want skip %v; actions %v, skips %v", want, res.Actions, res.Skipped)
		}
		return false
	}
	if len(res.Actions) != 1 || res.Actions[0].Kind != Open {
		t.Fatalf("want an open; actions %v, skips %v", res.Actions, res.Skipped)
	}
	return true
}
