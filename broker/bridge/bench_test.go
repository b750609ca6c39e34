package bridge_test

import (
	"slices"
	"testing"
	"time"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/broker/bridge"
	"github.com/snapcopier/copier/internal/cputime"
)

// BenchmarkBridgeOrderRoundTrip opens and closes a position through the bridge over
// loopback, one after the other, and reports the median and 99th percentile of the pair
// and the process's CPU per order (client, server and simulator together).
func BenchmarkBridgeOrderRoundTrip(b *testing.B) {
	s := newSim()
	if err := s.Provision(b.Context(), broker.AccountSpec{Login: "bench", Balance: 1e9}); err != nil {
		b.Fatal(err)
	}
	ts := startServer(b, "127.0.0.1:0", s, s, bridge.ServerOptions{})
	c := dial(b, ts.addr, bridge.ClientOptions{})
	sess := connect(b, c, "bench")
	ctx := b.Context()
	lat := make([]time.Duration, 0, 1024)
	b.ReportAllocs()
	cpu := cputime.Process()
	for b.Loop() {
		start := time.Now()
		res, err := sess.Open(ctx, openReq(broker.Buy))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := sess.ClosePosition(ctx, broker.CloseRequest{Order: order(), Ticket: res.Ticket}); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	cpu = cputime.Process() - cpu
	b.ReportMetric(float64(cpu.Microseconds())/float64(2*b.N), "cpu-us/order")
	slices.Sort(lat)
	pct := func(p float64) float64 {
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Nanoseconds()) / 1e3
	}
	b.ReportMetric(pct(0.50), "p50-µs")
	b.ReportMetric(pct(0.99), "p99-µs")
}
