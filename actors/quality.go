package actors

import (
	"math"
	"slices"
	"sort"
	"sync/atomic"
	"time"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/reconcile"
	"github.com/snapcopier/copier/reconcile/protect"
)

// copyOrigin is the master event an order serves on the event path: when the master's
// server stamped it, when this node received it, and the master position it reports.
type copyOrigin struct {
	serverTime time.Time
	received   time.Time
	kind       broker.EventKind
	master     broker.Position
}

// Quality is one copied order's quality: the latency split in three and, for an open
// copied from the master's open, the slippage.
type Quality struct {
	// Feed is master server time → the node received the event (clocks of two machines:
	// skew shows here). Node is received → order sent. Broker is sent → executed by the
	// broker's clock (skew shows here too).
	Feed, Node, Broker time.Duration
	// Slippage is the follower's fill against the master's price in the follower symbol's
	// points, positive when worse (reconcile/protect.Slippage); valid when HasSlippage.
	Slippage    float64
	HasSlippage bool
}

// measureQuality is the quality of act, executed at result after being sent at sent, for
// the event origin o. point is the follower symbol's point (0: unknown, no slippage).
func measureQuality(o *copyOrigin, act reconcile.Action, result broker.OrderResult, sent time.Time, point float64) Quality {
	q := Quality{Feed: o.received.Sub(o.serverTime), Node: sent.Sub(o.received)}
	if !result.ServerTime.IsZero() {
		q.Broker = result.ServerTime.Sub(sent)
	}
	if act.Kind == reconcile.Open && o.kind == broker.Opened && o.master.OpenPrice > 0 && result.Price > 0 && point > 0 {
		q.Slippage = protect.Slippage(act.Side == broker.Buy, o.master.OpenPrice, result.Price, point)
		q.HasSlippage = true
	}
	return q
}

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
