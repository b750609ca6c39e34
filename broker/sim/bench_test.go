package sim_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/broker/sim"
)

// BenchmarkOrderRoundTrip opens and closes one position per iteration through an
// in-process session and reports the latency percentiles of the pair.
func BenchmarkOrderRoundTrip(b *testing.B) {
	srv := sim.New(sim.Config{Seed: 1, OrderLogLimit: 10000})
	provision(b, srv, broker.AccountSpec{Login: "bench", Balance: 1e12})
	s := connect(b, srv, "bench")
	ctx := context.Background()
	lat := make([]time.Duration, 0, 1<<16)
	for b.Loop() {
		start := time.Now()
		res, err := s.Open(ctx, openReq("EURUSD", broker.Buy, 0.01))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.ClosePosition(ctx, broker.CloseRequest{Order: ord(), Ticket: res.Ticket}); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	reportPercentiles(b, lat)
}

// BenchmarkOrderRoundTripParallel runs open+close pairs from parallel goroutines, each on
// its own account, to show that accounts do not contend.
func BenchmarkOrderRoundTripParallel(b *testing.B) {
	srv := sim.New(sim.Config{Seed: 1, OrderLogLimit: 10000})
	var next atomic.Int64
	ctx := context.Background()
	b.RunParallel(func(pb *testing.PB) {
		login := fmt.Sprintf("bench-%d", next.Add(1))
		provision(b, srv, broker.AccountSpec{Login: login, Balance: 1e12})
		s := connect(b, srv, login)
		for pb.Next() {
			res, err := s.Open(ctx, openReq("EURUSD", broker.Buy, 0.01))
			if err != nil {
				b.Error(err)
				return
			}
			if _, err := s.ClosePosition(ctx, broker.CloseRequest{Order: ord(), Ticket: res.Ticket}); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkFeedFanout: one master account, 1,000 sessions subscribed to it. Each
// iteration is one master event delivered to every subscriber; events are produced in
// batches no larger than the feed buffer, and each batch waits until every subscriber has
// read it. Reports the events delivered per second in total.
func BenchmarkFeedFanout(b *testing.B) {
	const subscribers, batch = 1000, 256
	srv := sim.New(sim.Config{Seed: 1, OrderLogLimit: 10000})
	provision(b, srv, broker.AccountSpec{Login: "master", Balance: 1e9})
	ctx := context.Background()

	var (
		expected  atomic.Int64 // events each subscriber has after the current batch
		batchDone sync.WaitGroup
		consumers sync.WaitGroup
		sessions  []broker.Session
	)
	for range subscribers {
		s, err := srv.Connect(ctx, broker.Credentials{Login: "master"})
		if err != nil {
			b.Fatal(err)
		}
		sessions = append(sessions, s)
		feed, err := s.Subscribe(ctx)
		if err != nil {
			b.Fatal(err)
		}
		consumers.Go(func() {
			var n int64
			for range feed {
				n++
				if n == expected.Load() {
					batchDone.Done()
				}
			}
		})
	}
	defer func() {
		for _, s := range sessions {
			_ = s.Close()
		}
		consumers.Wait()
	}()

	var open []int64
	b.ResetTimer()
	start := time.Now()
	for done := 0; done < b.N; {
		n := min(batch, b.N-done)
		batchDone.Add(subscribers)
		expected.Add(int64(n))
		for range n {
			if len(open) > 0 && len(open)%2 == 0 {
				if err := srv.MasterClose(ctx, "master", open[0], 0); err != nil {
					b.Fatal(err)
				}
				open = open[1:]
				continue
			}
			p, err := srv.MasterOpen(ctx, "master", broker.MasterOpenRequest{Symbol: "EURUSD", Side: broker.Buy, Volume: 0.01})
			if err != nil {
				b.Fatal(err)
			}
			open = append(open, p.Ticket)
		}
		batchDone.Wait()
		done += n
	}
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)*subscribers/elapsed.Seconds(), "events/s")
}

// reportPercentiles reports the p50 and p99 of lat in microseconds.
func reportPercentiles(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	at := func(q float64) float64 {
		return float64(lat[int(q*float64(len(lat)-1))].Nanoseconds()) / 1e3
	}
	b.ReportMetric(at(0.50), "p50-µs")
	b.ReportMetric(at(0.99), "p99-µs")
}
