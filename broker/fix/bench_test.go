package fix_test

import (
	"context"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/broker/bridge"
	"github.com/snapcopier/copier/broker/sim"
)

// BenchmarkOrderRoundTrip measures, in one run, an order's round trip through the
// in-process simulator, the bridge on loopback and FIX on loopback (the simulator's FIX
// front): "open" is one market order (the position is closed again outside the measured
// time), "open+close" opens and closes a position (over FIX the close reads the positions
// first, as a FIX close must know the position's side and volume). It reports the median
// and 99th percentile of the measured operation (ns/op includes the unmeasured close).
func BenchmarkOrderRoundTrip(b *testing.B) {
	transports := []struct {
		name    string
		session func(b *testing.B, s *sim.Server) broker.Session
	}{
		{"inproc", func(b *testing.B, s *sim.Server) broker.Session { return benchConnect(b, s) }},
		{"bridge", func(b *testing.B, s *sim.Server) broker.Session {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			srv := bridge.NewServer(s, s, bridge.ServerOptions{Token: "bench-token"})
			done := make(chan error, 1)
			go func() { done <- srv.Serve(l) }()
			b.Cleanup(func() { _ = srv.Close(); <-done })
			c, err := bridge.Dial(b.Context(), l.Addr().String(), bridge.ClientOptions{Token: "bench-token"})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = c.Close() })
			return benchConnect(b, c)
		}},
		{"fix", func(b *testing.B, s *sim.Server) broker.Session {
			e := newEnvFor(b, s, envOptions{})
			return benchConnect(b, e.broker)
		}},
	}
	for _, tr := range transports {
		for _, op := range []string{"open", "open+close"} {
			b.Run(tr.name+"/"+op, func(b *testing.B) {
				s := sim.New(sim.Config{Seed: 1, AutoProvision: true})
				if err := s.Provision(b.Context(), broker.AccountSpec{Login: "bench", Password: "pw", Balance: 1e12, Leverage: 500}); err != nil {
					b.Fatal(err)
				}
				sess := tr.session(b, s)
				specs, err := sess.Symbols(b.Context())
				if err != nil {
					b.Fatal(err)
				}
				sym := specs[0]
				ctx := context.Background()
				lat := make([]time.Duration, 0, 4096)
				for b.Loop() {
					start := time.Now()
					res, err := sess.Open(ctx, broker.OpenRequest{Order: broker.Order{RequestID: uuid.New(), Token: 1}, Symbol: sym.Name, Side: broker.Buy, Volume: sym.MinLot})
					if err != nil {
						b.Fatal(err)
					}
					if op == "open+close" {
						if _, err := sess.ClosePosition(ctx, broker.CloseRequest{Order: broker.Order{RequestID: uuid.New(), Token: 1}, Ticket: res.Ticket}); err != nil {
							b.Fatal(err)
						}
					}
					lat = append(lat, time.Since(start))
					if op == "open" {
						// Not measured: keep the account at one position, as open+close does.
						if err := s.MasterClose(ctx, "bench", res.Ticket, 0); err != nil {
							b.Fatal(err)
						}
					}
				}
				slices.Sort(lat)
				pct := func(p float64) float64 {
					return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Nanoseconds()) / 1e3
				}
				b.ReportMetric(pct(0.50), "p50-µs")
				b.ReportMetric(pct(0.99), "p99-µs")
			})
		}
	}
}

func benchConnect(b *testing.B, bk broker.Broker) broker.Session {
	s, err := bk.Connect(b.Context(), broker.Credentials{Login: "bench", Password: "pw"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	return s
}
