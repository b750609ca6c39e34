package actors

import (
	"testing"
	"time"
)

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
