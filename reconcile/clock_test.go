package reconcile

import (
	"testing"
	"time"

	"github.com/snapcopier/copier/broker"
)

// TestPlanDatesMasterPositionsByTheServersClock: a master position's OpenTime is on its
// trade server's clock; the plan ages it by Input.MasterClock, the server's offset from
// Now's clock, for the opening window (60 s) and for a copy's lateness under a
// price-deviation bound with an old quote.
func TestPlanDatesMasterPositionsByTheServersClock(t *testing.T) {
	cases := []struct {
		name       string
		openedAgo  time.Duration // Now − OpenTime, the clocks mixed
		clock      time.Duration // the server's clock ahead of Now's
		staleQuote bool          // a deviation bound and a quote read an hour ago
		want       SkipReason    // 0: opened
	}{
		{name: "server behind: 90 s on the clocks, 50 s old", openedAgo: 90 * time.Second, clock: -40 * time.Second},
		{name: "one clock: 90 s old", openedAgo: 90 * time.Second, want: SkipTooOld},
		{name: "server ahead: 30 s on the clocks, 70 s old", openedAgo: 30 * time.Second, clock: 40 * time.Second, want: SkipTooOld},
		{name: "server behind: 5 s on the clocks, timely", openedAgo: 5 * time.Second, clock: -5 * time.Second, staleQuote: true},
		{name: "one clock: 5 s late", openedAgo: 5 * time.Second, staleQuote: true, want: SkipQuoteStale},
		{name: "server ahead: 0 s on the clocks, 5 s late", clock: 5 * time.Second, staleQuote: true, want: SkipQuoteStale},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := testInput(broker.Hedging)
			in.MasterClock = tc.clock
			in.Link.Settings.Window.MaxAgeSeconds = 60
			if tc.staleQuote {
				in.Link.Settings.Window.MaxDeviationPoints = 30
				in.Follower.QuotesAt = in.Now.Add(-time.Hour)
			}
			in.Master.Positions = []broker.Position{mpos(501, "EURUSD", broker.Buy, 0.4, tc.openedAgo)}
			wantOneOpenOrSkip(t, Plan(in), tc.want)
		})
	}
}
