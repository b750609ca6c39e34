package follower

import (
	"os"
	"strconv"
	"testing"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/reconcile"
)

// BenchmarkCoreCopy is the Core's own part of the fan-out, per copied order: a master
// open copied (event, plan, order outcome) and its close copied, on a hedging follower
// with one link. No actor, no broker: what an AccountActor adds is in actors'
// BenchmarkFanout.
func BenchmarkCoreCopy(b *testing.B) {
	h := newHarness(b, Options{})
	h.copying(config(1, ""), state("f", broker.Hedging), state("m", broker.Hedging))
	seq, ticket := int64(5), int64(1000)
	b.ReportAllocs()
	for b.Loop() {
		ticket++
		seq++
		p := h.mpos(ticket)
		h.copyEvent(broker.Opened, seq, p, reconcile.Open, ticket+50_000)
		seq++
		h.copyEvent(broker.Closed, seq, p, reconcile.Close, ticket+50_000)
		if h.rd.Send != nil {
			b.Fatal("more than one order per event")
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(2*b.N), "ns/order")
}

// BenchmarkCoreCopyMany is BenchmarkCoreCopy over many Cores stepped in turn, as a node's
// fan-out steps its accounts: each order's Core is cold in the cache.
func BenchmarkCoreCopyMany(b *testing.B) {
	n := 1000
	if s := os.Getenv("CORES"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil || n < 1 {
			b.Fatalf("CORES=%q: want a count of Cores ≥ 1", s)
		}
	}
	hs := make([]*harness, n)
	for i := range hs {
		hs[i] = newHarness(b, Options{})
		hs[i].copying(config(1, ""), state("f", broker.Hedging), state("m", broker.Hedging))
	}
	seq, ticket := int64(5), int64(1000)
	b.ReportAllocs()
	for b.Loop() {
		ticket++
		seq++
		for _, h := range hs {
			h.copyEvent(broker.Opened, seq, h.mpos(ticket), reconcile.Open, ticket+50_000)
		}
		seq++
		for _, h := range hs {
			h.copyEvent(broker.Closed, seq, h.mpos(ticket), reconcile.Close, ticket+50_000)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(2*n*b.N), "ns/order")
}

// copyEvent steps master 100's event (epoch 1) and the one order it plans, filled as
// follower ticket fill.
func (h *harness) copyEvent(kind broker.EventKind, seq int64, p broker.Position, want reconcile.ActionKind, fill int64) {
	h.t.Helper()
	h.event(kind, 1, seq, p)
	h.wantSend(want)
	h.filled(fill)
}
