package actors_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"

	"github.com/snapcopier/copier/actors"
	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/broker/sim"
	"github.com/snapcopier/copier/internal/testwait"
	"github.com/snapcopier/copier/reconcile"
	"github.com/snapcopier/copier/store"
	"github.com/snapcopier/copier/store/storetest"
)

// BenchmarkFanout: one master event copied to N followers held by one node, in-process
// simulator without injected latency. Reports p50/p99/max from the master event's server
// time to each follower order's server time, the time from start to all N accounts
// reconciled (takeover), heap per owned account, and the raw protoactor send rate
// measured in the same run.
func BenchmarkFanout(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("followers=%d", n), func(b *testing.B) { benchFanout(b, n) })
	}
}

func benchFanout(b *testing.B, followers int) {
	ctx := context.Background()
	db := storetest.NewDB(b)
	s := sim.New(sim.Config{Seed: 1, AutoProvision: true, DefaultAccount: broker.AccountSpec{Currency: "USD", Balance: 1e6, Leverage: 100, Mode: broker.Hedging}})
	if err := s.Provision(ctx, broker.AccountSpec{Login: "m1", Currency: "USD", Balance: 1e6, Leverage: 100, Mode: broker.Hedging}); err != nil {
		b.Fatal(err)
	}
	if err := store.CreateAccount(ctx, db.Pool, store.Account{ID: 1, Platform: "sim", Role: store.RoleMaster, Enabled: true, Login: "m1"}); err != nil {
		b.Fatal(err)
	}
	settings, _ := json.Marshal(reconcile.DefaultSettings())
	if _, err := db.Pool.Exec(ctx, `INSERT INTO trading_accounts (id, platform, role, login) SELECT g, 'sim', 'follower', 'f' || g FROM generate_series(1001, 1000 + $1::bigint) g`, followers); err != nil {
		b.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `INSERT INTO copy_links (master_id, follower_id, magic, settings) SELECT 1, g, 77, $2 FROM generate_series(1001, 1000 + $1::bigint) g`, followers, settings); err != nil {
		b.Fatal(err)
	}
	var before, after runtimeMem
	before.read()
	started := time.Now()
	node, err := actors.Start(ctx, actors.Config{NodeID: "bench", Platform: "sim", Capacity: followers, ReconcileEvery: -1,
		ReconcileConcurrency: 64, ReconcileRate: 100000}, actors.Deps{Pool: db.NewPool(b, store.Options{MaxConns: 16}), Broker: s, Logger: zerolog.Nop()})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = node.Stop(context.Background()) }()
	waitFor(b, 5*time.Minute, func() bool {
		snap := node.Snapshot()
		if len(snap.Accounts) < followers {
			return false
		}
		for _, a := range snap.Accounts {
			if a.Phase != actors.PhaseCopying {
				return false
			}
		}
		return true
	})
	takeover := time.Since(started)
	after.read()
	var lat []time.Duration
	for b.Loop() {
		p, err := s.MasterOpen(ctx, "m1", broker.MasterOpenRequest{Symbol: "EURUSD", Side: broker.Buy, Volume: 0.01, Magic: 1})
		if err != nil {
			b.Fatal(err)
		}
		lat = append(lat, waitCopies(b, s, p, followers)...)
		if err := s.MasterClose(ctx, "m1", p.Ticket, 0); err != nil {
			b.Fatal(err)
		}
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(lat[len(lat)/2]), "p50-ms")
	b.ReportMetric(ms(lat[len(lat)*99/100]), "p99-ms")
	b.ReportMetric(ms(lat[len(lat)-1]), "max-ms")
	b.ReportMetric(takeover.Seconds(), "takeover-s")
	b.ReportMetric(float64(after.heap-before.heap)/float64(followers)/1024, "heap-KiB/account")
	b.ReportMetric(rawSendRate(), "protoactor-msg/s")
}

// waitCopies waits until every follower has opened its copy of p and returns the latency
// of each, from the master's order log entry to the follower's.
func waitCopies(b *testing.B, s *sim.Server, p broker.Position, followers int) []time.Duration {
	marker := reconcile.Marker(p.Ticket)
	var out []time.Duration
	waitFor(b, 2*time.Minute, func() bool {
		log, err := s.OrderLog(context.Background(), 0, 0)
		if err != nil {
			b.Fatal(err)
		}
		var masterAt time.Time
		out = out[:0]
		for _, e := range log {
			if e.Master && e.Op == broker.OpOpen && e.Ticket == p.Ticket {
				masterAt = e.ServerTime
			}
			if !e.Master && e.Op == broker.OpOpen && e.Executed && e.Comment == marker {
				out = append(out, e.ServerTime.Sub(masterAt))
			}
		}
		return len(out) >= followers
	})
	return out
}

func waitFor(b *testing.B, within time.Duration, cond func() bool) {
	b.Helper()
	testwait.For(b, "benchmark condition", within, func() (bool, string) { return cond(), "not yet" })
}

// rawSendRate measures protoactor's Send to one trivial actor: the runtime's limit.
func rawSendRate() float64 {
	system := actor.NewActorSystem()
	done := make(chan struct{})
	const msgs = 1_000_000
	count := 0
	pid := system.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
		if _, ok := c.Message().(int); ok {
			count++
			if count == msgs {
				close(done)
			}
		}
	}))
	t0 := time.Now()
	for i := 0; i < msgs; i++ {
		system.Root.Send(pid, i)
	}
	<-done
	rate := msgs / time.Since(t0).Seconds()
	_ = system.Root.StopFuture(pid).Wait()
	system.Shutdown()
	return rate
}
