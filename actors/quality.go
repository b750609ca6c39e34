package actors

import (
	"math"
	"slices"
	"sort"
	"sync/atomic"
	"time"

	"github.com/snapcopier/copier/reconcile/follower"
)

// Quality is one copied order's quality (follower.Quality).
type Quality = follower.Quality

// qualitySamples is how many recent copies per link the account page's summary covers.
const qualitySamples = 32

// qualitySample is one copy, compact: microseconds and points in 4 bytes each.
type qualitySample struct {
	feed, node, broker int32 // µs
	slippage           float32
	hasSlippage        bool
}

// qualityRing keeps the last qualitySamples copies of one link.
type qualityRing struct {
	s    [qualitySamples]qualitySample
	n    int // samples stored, ≤ qualitySamples
	next int
}

func micros(d time.Duration) int32 {
	us := d.Microseconds()
	return int32(max(min(us, math.MaxInt32), math.MinInt32))
}

func (r *qualityRing) add(q Quality) {
	r.s[r.next] = qualitySample{feed: micros(q.Feed), node: micros(q.Node), broker: micros(q.Broker), slippage: float32(q.Slippage), hasSlippage: q.HasSlippage}
	r.next = (r.next + 1) % qualitySamples
	r.n = min(r.n+1, qualitySamples)
}

// LinkQuality summarises a link's recent copies (the last 32): p50 and p95 of the
// slippage (in points) and of each latency part and their total.
type LinkQuality struct {
	Link                     int64
	Copies                   int // samples summarised
	SlippageSamples          int
	SlippageP50, SlippageP95 float64
	TotalP50, TotalP95       time.Duration
	FeedP50, FeedP95         time.Duration
	NodeP50, NodeP95         time.Duration
	BrokerP50, BrokerP95     time.Duration
}

func (r *qualityRing) summary(link int64) LinkQuality {
	out := LinkQuality{Link: link, Copies: r.n}
	var slip []float64
	feed, node, brk, total := make([]int64, 0, r.n), make([]int64, 0, r.n), make([]int64, 0, r.n), make([]int64, 0, r.n)
	for _, s := range r.s[:r.n] {
		feed, node, brk = append(feed, int64(s.feed)), append(node, int64(s.node)), append(brk, int64(s.broker))
		total = append(total, int64(s.feed)+int64(s.node)+int64(s.broker))
		if s.hasSlippage {
			slip = append(slip, float64(s.slippage))
		}
	}
	us := func(v []int64, p float64) time.Duration { return time.Duration(percentile(v, p)) * time.Microsecond }
	out.FeedP50, out.FeedP95 = us(feed, 50), us(feed, 95)
	out.NodeP50, out.NodeP95 = us(node, 50), us(node, 95)
	out.BrokerP50, out.BrokerP95 = us(brk, 50), us(brk, 95)
	out.TotalP50, out.TotalP95 = us(total, 50), us(total, 95)
	out.SlippageSamples = len(slip)
	out.SlippageP50, out.SlippageP95 = percentile(slip, 50), percentile(slip, 95)
	return out
}

// percentile is the nearest-rank p-th percentile of v (0 for none); v is sorted in place.
func percentile[T int64 | float64](v []T, p float64) T {
	if len(v) == 0 {
		return 0
	}
	slices.Sort(v)
	i := int(math.Ceil(p/100*float64(len(v)))) - 1
	return v[max(i, 0)]
}

// slippageBounds are the upper bounds of the slippage histogram buckets, in points.
var slippageBounds = [...]float64{-50, -20, -10, -5, -2, -1, 0, 1, 2, 5, 10, 20, 50}

// SlippageBounds returns the upper bounds of the slippage histogram buckets, in points.
func SlippageBounds() []float64 { return append([]float64(nil), slippageBounds[:]...) }

// slippageHistogram counts slippage observations in points.
type slippageHistogram struct {
	buckets  [len(slippageBounds) + 1]atomic.Int64
	count    atomic.Int64
	sumMilli atomic.Int64 // thousandths of a point
}

func (h *slippageHistogram) observe(points float64) {
	h.buckets[sort.SearchFloat64s(slippageBounds[:], points)].Add(1)
	h.count.Add(1)
	h.sumMilli.Add(int64(math.Round(points * 1000)))
}

// SlippageHistogram is a cumulative-bucket snapshot of the slippage, in points.
type SlippageHistogram struct {
	Counts [len(slippageBounds)]int64 // observations ≤ SlippageBounds()[i], cumulative
	Count  int64
	Sum    float64 // points
}

func (h *slippageHistogram) snapshot() SlippageHistogram {
	var out SlippageHistogram
	var cum int64
	for i := range slippageBounds {
		cum += h.buckets[i].Load()
		out.Counts[i] = cum
	}
	out.Count = h.count.Load()
	out.Sum = float64(h.sumMilli.Load()) / 1000
	return out
}
