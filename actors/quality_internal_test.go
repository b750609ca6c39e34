package actors

import (
	"testing"
	"time"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/reconcile"
)

// TestMeasureQuality: the three latency parts add up to the whole (event server time to
// execution), and slippage is measured only for an open copied from the master's open,
// worse positive on either side.
func TestMeasureQuality(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	o := &copyOrigin{serverTime: t0, received: t0.Add(3 * time.Millisecond), kind: broker.Opened,
		master: broker.Position{Symbol: "EURUSD", Side: broker.Buy, OpenPrice: 1.08500}}
	sent := t0.Add(5 * time.Millisecond)
	res := broker.OrderResult{Price: 1.08520, ServerTime: t0.Add(12 * time.Millisecond)}
	q := measureQuality(o, reconcile.Action{Kind: reconcile.Open, Side: broker.Buy}, res, sent, 0.00001)
	if q.Feed != 3*time.Millisecond || q.Node != 2*time.Millisecond || q.Broker != 7*time.Millisecond {
		t.Fatalf("parts %v %v %v", q.Feed, q.Node, q.Broker)
	}
	if q.Feed+q.Node+q.Broker != res.ServerTime.Sub(o.serverTime) {
		t.Fatal("the parts do not add up to the copy latency")
	}
	if !q.HasSlippage || q.Slippage < 19.999 || q.Slippage > 20.001 {
		t.Fatalf("buy filled 2 pips above the master: slippage %v (%v)", q.Slippage, q.HasSlippage)
	}
	// A reversed copy sells: receiving more than the master paid is better (negative).
	q = measureQuality(o, reconcile.Action{Kind: reconcile.Open, Side: broker.Sell}, res, sent, 0.00001)
	if q.Slippage > -19.999 || q.Slippage < -20.001 {
		t.Fatalf("sell filled 2 pips above: slippage %v", q.Slippage)
	}
	for name, c := range map[string]struct {
		act   reconcile.Action
		kind  broker.EventKind
		point float64
	}{
		"a close":          {reconcile.Action{Kind: reconcile.Close, Side: broker.Buy}, broker.Opened, 0.00001},
		"a modify event":   {reconcile.Action{Kind: reconcile.Open, Side: broker.Buy}, broker.Modified, 0.00001},
		"an unknown point": {reconcile.Action{Kind: reconcile.Open, Side: broker.Buy}, broker.Opened, 0},
	} {
		oo := *o
		oo.kind = c.kind
		if q := measureQuality(&oo, c.act, res, sent, c.point); q.HasSlippage {
			t.Errorf("%s: slippage measured (%v)", name, q.Slippage)
		}
	}
}

// TestQualityRingSummary: the summary covers the last 32 copies only, with nearest-rank
// percentiles.
func TestQualityRingSummary(t *testing.T) {
	var r qualityRing
	for i := 1; i <= 40; i++ { // copies 1..8 fall out
		r.add(Quality{Feed: time.Duration(i) * time.Millisecond, Slippage: float64(i), HasSlippage: i%2 == 0})
	}
	s := r.summary(7)
	if s.Link != 7 || s.Copies != 32 || s.SlippageSamples != 16 {
		t.Fatalf("summary %+v", s)
	}
	if s.FeedP50 != 24*time.Millisecond || s.FeedP95 != 39*time.Millisecond || s.TotalP50 != s.FeedP50 {
		t.Fatalf("feed p50 %v p95 %v total p50 %v", s.FeedP50, s.FeedP95, s.TotalP50)
	}
	if s.SlippageP50 != 24 || s.SlippageP95 != 40 {
		t.Fatalf("slippage p50 %v p95 %v", s.SlippageP50, s.SlippageP95)
	}
	var h slippageHistogram
	for _, v := range []float64{-3, 0, 0.5, 7, 100} {
		h.observe(v)
	}
	snap := h.snapshot()
	if snap.Count != 5 || snap.Sum != 104.5 || snap.Counts[len(snap.Counts)-1] != 4 || snap.Counts[6] != 2 {
		t.Fatalf("slippage histogram %+v", snap)
	}
}
