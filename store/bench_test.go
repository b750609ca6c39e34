package store_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/snapcopier/copier/internal/cputime"
	"github.com/snapcopier/copier/store"
	"github.com/snapcopier/copier/store/storetest"
)

func seedB(b *testing.B, pool *pgxpool.Pool, n int) {
	b.Helper()
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `INSERT INTO trading_accounts (id, platform, role, login)
		SELECT g, 'mt5', 'follower', 'login-' || g FROM generate_series(1, $1::bigint) g`, n); err != nil {
		b.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `VACUUM ANALYZE trading_accounts`); err != nil {
		b.Fatal(err)
	}
}

// hotCounts reads (updates, HOT updates) of trading_accounts after flushing this
// connection's pending statistics.
func hotCounts(b *testing.B, pool *pgxpool.Pool) (upd, hot int64) {
	b.Helper()
	ctx := context.Background()
	conn, err := pool.Acquire(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_stat_force_next_flush()`); err != nil {
		b.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `SELECT pg_stat_clear_snapshot()`); err != nil {
		b.Fatal(err)
	}
	if err := conn.QueryRow(ctx, `SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables WHERE relname = 'trading_accounts'`).Scan(&upd, &hot); err != nil {
		b.Fatal(err)
	}
	return upd, hot
}

// BenchmarkLeaseCycle: one node renewing 1,000 or 10,000 leases in a 100,000-row table.
// Each iteration runs one full lease cycle and, interleaved so both see the same machine
// load, one plain UPDATE of the same rows (the floor); it reports both, their ratio, and
// the share of the cycle's renewals that were HOT updates.
//
// With fair share (the default of a node) the cycle also counts the platform's followers
// and reads the live nodes; the share here is what the node owns, so it neither claims
// nor hands off.
//
// With room, the node's capacity is a quarter above what it owns (a node's default
// capacity is 1.25 × its share) and another node holds every other follower: each cycle
// also asks whether a lease ran out and when the other node's leases end, as every cycle
// of a node with room does.
func BenchmarkLeaseCycle(b *testing.B) {
	for _, c := range []struct {
		owned       int
		share, room bool
	}{{1000, false, false}, {1000, true, false}, {10000, false, false}, {10000, true, false}, {10000, true, true}} {
		owned := c.owned
		name := fmt.Sprintf("owned=%d/fair-share=%v", owned, c.share)
		if c.room {
			name += "/room"
		}
		b.Run(name, func(b *testing.B) {
			db := storetest.NewDB(b)
			pool := db.NewPool(b, store.Options{MaxConns: 1})
			seedB(b, pool, 100_000)
			ctx := context.Background()
			req := store.CycleRequest{Node: "bench", Platform: "mt5", Lease: time.Minute, Capacity: owned}
			res, err := store.LeaseCycle(ctx, pool, req)
			if err != nil || len(res.Owned) != owned {
				b.Fatalf("initial claim: %d, %v", len(res.Owned), err)
			}
			req.Held = heldOf(res.Owned)
			if c.share {
				req.Share = func(store.ClusterView) int { return owned }
			}
			if c.room {
				req.Capacity = owned * 5 / 4
				if _, err := pool.Exec(ctx, `UPDATE trading_accounts SET node_id = 'other', lease_until = now() + interval '1 hour', lease_epoch = 1
					WHERE node_id IS NULL`); err != nil {
					b.Fatal(err)
				}
				if _, err := pool.Exec(ctx, `VACUUM ANALYZE trading_accounts`); err != nil {
					b.Fatal(err)
				}
			}
			var cycleT, plainT time.Duration
			var cycleUpd, cycleHot int64
			b.ResetTimer()
			for b.Loop() {
				u0, h0 := hotCounts(b, pool)
				t0 := time.Now()
				r, err := store.LeaseCycle(ctx, pool, req)
				cycleT += time.Since(t0)
				if err != nil || r.Renewed != owned {
					b.Fatalf("cycle: renewed %d, %v", r.Renewed, err)
				}
				u1, h1 := hotCounts(b, pool)
				cycleUpd += u1 - u0
				cycleHot += h1 - h0
				t0 = time.Now()
				if _, err := pool.Exec(ctx, `UPDATE trading_accounts SET lease_until = now() + interval '60 seconds' WHERE node_id = 'bench'`); err != nil {
					b.Fatal(err)
				}
				plainT += time.Since(t0)
			}
			n := float64(b.N)
			b.ReportMetric(float64(cycleT.Microseconds())/n/1000, "cycle-ms")
			b.ReportMetric(float64(plainT.Microseconds())/n/1000, "plain-update-ms")
			b.ReportMetric(float64(cycleT)/float64(plainT), "cycle/plain")
			if cycleUpd > 0 {
				b.ReportMetric(100*float64(cycleHot)/float64(cycleUpd), "hot-%")
			}
		})
	}
}

// BenchmarkClaimThroughput: K nodes race to claim 20,000 free followers, 500 per cycle
// each, until none is left; reports rows claimed per second in total.
func BenchmarkClaimThroughput(b *testing.B) {
	const rows, batch = 20_000, 500
	for _, nodes := range []int{1, 2, 4, 8} {
		b.Run(fmt.Sprintf("nodes=%d", nodes), func(b *testing.B) {
			db := storetest.NewDB(b)
			seedB(b, db.Pool, rows)
			pools := make([]*pgxpool.Pool, nodes)
			for i := range pools {
				pools[i] = db.NewPool(b, store.Options{MaxConns: 1})
			}
			ctx := context.Background()
			var elapsed time.Duration
			for b.Loop() {
				b.StopTimer()
				if _, err := db.Pool.Exec(ctx, `UPDATE trading_accounts SET node_id = NULL, lease_until = NULL`); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				t0 := time.Now()
				var wg sync.WaitGroup
				var mu sync.Mutex
				claimed := 0
				for i, p := range pools {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for {
							r, err := store.LeaseCycle(ctx, p, store.CycleRequest{Node: fmt.Sprintf("n%d", i), Platform: "mt5", Lease: time.Minute, Capacity: batch})
							if err != nil {
								b.Error(err)
								return
							}
							mu.Lock()
							claimed += r.Claimed
							mu.Unlock()
							if r.Claimed == 0 {
								return
							}
						}
					}()
				}
				wg.Wait()
				elapsed += time.Since(t0)
				if claimed != rows {
					b.Fatalf("claimed %d rows, want %d", claimed, rows)
				}
			}
			b.ReportMetric(float64(rows*b.N)/elapsed.Seconds(), "rows/s")
		})
	}
}

// BenchmarkFencedWrites: what a node's StatusWriter writes after a round of copies to
// 1,000 followers: a ticket-map row, a status and a positions snapshot for each, through
// the fence. The ticket-map rows are those of a copy opened in one round and closed in
// the next (an insert, then an update), as a node writes them. Beside ns/op and the
// allocations it reports this process's CPU per follower (client-cpu-us/follower: the
// parameters' encoding and the protocol) and the PostgreSQL backend's CPU per row of each
// statement (server-cpu-us/…-row; read from /proc in clock ticks, so run enough
// iterations: 100 give about 1 %).
func BenchmarkFencedWrites(b *testing.B) {
	const n = 1000
	db := storetest.NewDB(b)
	pool := db.NewPool(b, store.Options{MaxConns: 1}) // one backend: its CPU is the statements'
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `INSERT INTO trading_accounts (id, platform, role, login) VALUES (1, 'mt5', 'master', 'm')`); err != nil {
		b.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO trading_accounts (id, platform, role, login)
		SELECT g, 'mt5', 'follower', 'f' || g FROM generate_series(2, $1::bigint + 1) g`, n); err != nil {
		b.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO copy_links (master_id, follower_id, magic) SELECT 1, g, 7 FROM generate_series(2, $1::bigint + 1) g`, n); err != nil {
		b.Fatal(err)
	}
	res, err := store.LeaseCycle(ctx, pool, store.CycleRequest{Node: "bench", Platform: "mt5", Lease: time.Hour, Capacity: n})
	if err != nil || len(res.Owned) != n {
		b.Fatalf("claim: %d, %v", len(res.Owned), err)
	}
	links := map[int64]int64{}
	rows, err := pool.Query(ctx, `SELECT follower_id, id FROM copy_links`)
	if err != nil {
		b.Fatal(err)
	}
	for rows.Next() {
		var f, l int64
		if err := rows.Scan(&f, &l); err != nil {
			b.Fatal(err)
		}
		links[f] = l
	}
	if rows.Err() != nil {
		b.Fatal(rows.Err())
	}
	positions := []byte(`[{"ticket":100000123,"symbol":"EURUSD","side":"buy","volume":0.01,"open_price":1.08512,"sl":0,"tp":0,"magic":7,"comment":"cp:4711"}]`)
	now := time.Now()
	tickets := make([]store.TicketRow, n)
	statuses := make([]store.AccountStatus, n)
	snaps := make([]store.PositionsSnapshot, n)
	for i, o := range res.Owned {
		tickets[i] = store.TicketRow{FollowerID: o.ID, Epoch: o.Epoch, LinkID: links[o.ID], MasterTicket: 4711, FollowerTicket: 100000000 + o.ID, Volume: 1}
		statuses[i] = store.AccountStatus{ID: o.ID, Epoch: o.Epoch, Status: "copying", Balance: 100000, Equity: 99987.5, At: now, LastCopyAt: now}
		snaps[i] = store.PositionsSnapshot{ID: o.ID, Epoch: o.Epoch, Positions: positions, SeenAt: now}
	}
	var backend int
	if err := pool.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&backend); err != nil {
		b.Fatal(err)
	}
	serverCPU := func() time.Duration {
		d, err := cputime.Of(backend)
		if err != nil {
			b.Fatal(err)
		}
		return d
	}
	writes := []struct {
		metric string
		write  func() (store.FencedResult, error)
	}{
		{"server-cpu-us/ticket-row", func() (store.FencedResult, error) { return store.UpsertTicketsFenced(ctx, pool, "bench", tickets) }},
		{"server-cpu-us/status-row", func() (store.FencedResult, error) { return store.WriteStatusesFenced(ctx, pool, "bench", statuses) }},
		{"server-cpu-us/snapshot-row", func() (store.FencedResult, error) { return store.WriteSnapshotsFenced(ctx, pool, "bench", snaps) }},
	}
	var cpu time.Duration
	server := make([]time.Duration, len(writes))
	round := 0
	for b.Loop() {
		// Even rounds open a copy of a new master ticket, odd rounds close it.
		for i := range tickets {
			tickets[i].MasterTicket, tickets[i].ClosedAt = int64(4711+round/2), time.Time{}
			if round%2 == 1 {
				tickets[i].ClosedAt = now
			}
		}
		round++
		for i, w := range writes {
			// The /proc reads stay outside this process's measured CPU.
			s0 := serverCPU()
			cpu0 := cputime.Process()
			r, err := w.write()
			cpu += cputime.Process() - cpu0
			if err != nil || r.Applied != n {
				b.Fatalf("write: %+v, %v", r, err)
			}
			server[i] += serverCPU() - s0
		}
	}
	b.ReportMetric(float64(cpu.Nanoseconds())/1000/float64(b.N*n), "client-cpu-us/follower")
	for i, w := range writes {
		b.ReportMetric(float64(server[i].Nanoseconds())/1000/float64(b.N*n), w.metric)
	}
}

// BenchmarkPruneClosedTickets: the history prune's cost per deleted row in a table that
// holds far more history than it deletes (200,000 rows closed within the history, 1,000
// open), as a node's prune turn finds it: each round 5,000 rows closed long ago are added
// and one PruneClosedTickets call deletes them. server-cpu-us/pruned-row is the backend's
// CPU of the deleting statements alone.
func BenchmarkPruneClosedTickets(b *testing.B) {
	const kept, open, batch = 200_000, 1000, 5000
	db := storetest.NewDB(b)
	pool := db.NewPool(b, store.Options{MaxConns: 1})
	ctx := context.Background()
	exec := func(sql string, args ...any) {
		if _, err := pool.Exec(ctx, sql, args...); err != nil {
			b.Fatal(err)
		}
	}
	exec(`INSERT INTO trading_accounts (id, platform, role, login) VALUES (1, 'mt5', 'master', 'm'), (2, 'mt5', 'follower', 'f')`)
	var link int64
	if err := pool.QueryRow(ctx, `INSERT INTO copy_links (master_id, follower_id, magic) VALUES (1, 2, 7) RETURNING id`).Scan(&link); err != nil {
		b.Fatal(err)
	}
	exec(`INSERT INTO copy_positions (follower_id, link_id, master_ticket, follower_ticket, volume, lease_epoch, closed_at)
		SELECT 2, $1, g, g, 1, 1, CASE WHEN g <= $2 THEN now() - g * interval '1 second' END FROM generate_series(1, $3::bigint) g`,
		link, kept, kept+open)
	exec(`ANALYZE copy_positions`)
	var backend int
	if err := pool.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&backend); err != nil {
		b.Fatal(err)
	}
	next := int64(kept + open + 1)
	var server time.Duration
	var deleted int64
	for b.Loop() {
		exec(`INSERT INTO copy_positions (follower_id, link_id, master_ticket, follower_ticket, volume, lease_epoch, closed_at)
			SELECT 2, $1, g, g, 1, 1, now() - interval '40 days' FROM generate_series($2::bigint, $2::bigint + $3 - 1) g`, link, next, batch)
		next += batch
		s0, err := cputime.Of(backend)
		if err != nil {
			b.Fatal(err)
		}
		n, err := store.PruneClosedTickets(ctx, pool, 30*24*time.Hour, batch)
		if err != nil || n != batch {
			b.Fatalf("prune: %d rows, %v", n, err)
		}
		s1, err := cputime.Of(backend)
		if err != nil {
			b.Fatal(err)
		}
		server += s1 - s0
		deleted += n
	}
	b.ReportMetric(float64(server.Nanoseconds())/1000/float64(deleted), "server-cpu-us/pruned-row")
}
