package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/snapcopier/copier/store"
	"github.com/snapcopier/copier/store/storetest"
)

// planNode is the part of an EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) node the test reads.
type planNode struct {
	ActualRows    float64    `json:"Actual Rows"`
	ActualLoops   float64    `json:"Actual Loops"`
	RemovedFilter float64    `json:"Rows Removed by Filter"`
	RemovedJoin   float64    `json:"Rows Removed by Join Filter"`
	SharedHit     float64    `json:"Shared Hit Blocks"`
	SharedRead    float64    `json:"Shared Read Blocks"`
	Plans         []planNode `json:"Plans"`
}

// work counts the rows every node of the plan produced or looked at and threw away, over
// all its loops: what the statement did, independent of the machine's speed.
func (n planNode) work() float64 {
	w := (n.ActualRows + n.RemovedFilter + n.RemovedJoin) * max(n.ActualLoops, 1)
	for _, c := range n.Plans {
		w += c.work()
	}
	return w
}

// explained is one statement's executed plan, as auto_explain reported it.
type explained struct {
	Query  string   `json:"Query Text"`
	Plan   planNode `json:"Plan"`
	notice string   // the whole report
}

// explainingPool opens a pool whose every statement's executed plan is sent back by
// auto_explain as a notice, and returns the plans collected so far on each call of take.
func explainingPool(t *testing.T, db *storetest.DB) (*pgxpool.Pool, func() []explained) {
	t.Helper()
	cfg, err := store.ParseConfig(db.URL, store.Options{MaxConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var plans []explained
	cfg.ConnConfig.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
		_, js, ok := strings.Cut(n.Message, "plan:\n")
		if !ok {
			return
		}
		e := explained{notice: js}
		if err := json.Unmarshal([]byte(js), &e); err != nil {
			t.Errorf("auto_explain notice: %v", err)
			return
		}
		mu.Lock()
		plans = append(plans, e)
		mu.Unlock()
	}
	cfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
		_, err := c.Exec(ctx, `LOAD 'auto_explain'`)
		if err == nil {
			_, err = c.Exec(ctx, `SET auto_explain.log_min_duration = 0; SET auto_explain.log_analyze = on;
				SET auto_explain.log_timing = off; SET auto_explain.log_buffers = on; SET auto_explain.log_format = json; SET auto_explain.log_level = notice`)
		}
		if err != nil {
			return fmt.Errorf("auto_explain (LOAD needs a superuser; PostgreSQL's contrib modules): %w", err)
		}
		return nil
	}
	pool, err := store.OpenConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool, func() []explained {
		mu.Lock()
		defer mu.Unlock()
		out := plans
		plans = nil
		return out
	}
}

// TestFencedWritesStayLinearWhateverTheStatistics: the statements a node runs every flush
// and every lease cycle, those that load the accounts it takes over and a FIX account's
// book look at rows and pages in proportion to what they write and what the node owns,
// whatever the table's statistics say: fresh, taken while every follower was free (a new
// platform), or taken while other nodes held every follower (a node that starts with a new
// id, as a pod does after each reschedule, and takes over a dead node's leases), until
// autovacuum analyzes the table again. It counts what each executed plan looked at
// (auto_explain's report), not the time: the status write, driven from the node_id index
// by such statistics, once joined every owned row with every row of its batch (7.5
// million rows for 500 statuses to 5,000 owned accounts).
func TestFencedWritesStayLinearWhateverTheStatistics(t *testing.T) {
	for _, c := range []struct {
		owned int
		stats string
	}{{5000, statsAllFree}, {5000, statsFresh}, {5000, statsOtherNodes}, {18000, statsAllFree}} {
		t.Run(fmt.Sprintf("owned=%d/statistics=%s", c.owned, c.stats), func(t *testing.T) { fencedWritesStayLinear(t, c.owned, c.stats) })
	}
}

// The statistics fencedWritesStayLinear's node meets.
const (
	statsAllFree    = "all-free"    // taken before any claim
	statsFresh      = "fresh"       // taken after the node's claim
	statsOtherNodes = "other-nodes" // taken while four other nodes held every follower; their leases have run out
)

// fencedWritesStayLinear: one node of a platform of 20,000 followers claims owned of them,
// then writes and cycles.
func fencedWritesStayLinear(t *testing.T, owned int, stats string) {
	const followers, batch = 20000, 1000
	db := storetest.NewDB(t)
	ctx := context.Background()
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := db.Pool.Exec(ctx, sql, args...); err != nil {
			t.Fatal(err)
		}
	}
	exec(`INSERT INTO trading_accounts (id, platform, role, login) SELECT g, 'mt5', 'master', 'm' || g FROM generate_series(1, 20) g`)
	exec(`INSERT INTO trading_accounts (id, platform, role, login) SELECT g, 'mt5', 'follower', 'f' || g FROM generate_series(21, $1::bigint + 20) g`, followers)
	exec(`INSERT INTO copy_links (master_id, follower_id, magic) SELECT 1 + g % 20, g, 7 FROM generate_series(21, $1::bigint + 20) g`, followers)
	if stats == statsOtherNodes {
		exec(`UPDATE trading_accounts SET node_id = 'old-' || (id % 4), lease_until = now() - interval '1 minute', lease_epoch = 1
			WHERE role = 'follower'`)
	}
	exec(`ANALYZE`)
	// The statistics change only where the test says: autovacuum could analyze the claimed
	// rows at any moment.
	exec(`ALTER TABLE trading_accounts SET (autovacuum_enabled = false)`)
	exec(`ALTER TABLE copy_links SET (autovacuum_enabled = false)`)
	exec(`ALTER TABLE copy_positions SET (autovacuum_enabled = false)`)
	pool, take := explainingPool(t, db)
	req := store.CycleRequest{Node: "n1", Platform: "mt5", Lease: time.Hour, Capacity: owned}
	res, err := store.LeaseCycle(ctx, pool, req)
	if err != nil || len(res.Owned) != owned {
		t.Fatalf("claim: %d, %v", len(res.Owned), err)
	}
	if stats == statsFresh {
		exec(`ANALYZE`)
	}
	take()
	rows, err := db.Pool.Query(ctx, `SELECT follower_id, id FROM copy_links`)
	if err != nil {
		t.Fatal(err)
	}
	pairs, err := pgx.CollectRows(rows, pgx.RowToStructByPos[struct{ Follower, Link int64 }])
	if err != nil {
		t.Fatal(err)
	}
	links := map[int64]int64{}
	for _, p := range pairs {
		links[p.Follower] = p.Link
	}

	// step runs one write that applies rows rows and checks that every statement it ran
	// looked at no more than ten times scale rows, and read no more than twenty pages a
	// unit of scale (and fifty more): scale is its rows and the node's, or, for a lease
	// cycle that also claims (it sorts the platform's free followers), the platform's
	// followers; a FIX book's statement, which finds one account, its rows alone.
	step := func(name string, rows, scale int, write func() (int64, error)) {
		t.Helper()
		applied, err := write()
		if err != nil || applied != int64(rows) {
			t.Fatalf("%s: applied %d of %d, %v", name, applied, rows, err)
		}
		plans := take()
		if len(plans) == 0 {
			t.Fatalf("%s: auto_explain reported no plan", name)
		}
		limit, blockLimit := 10*float64(scale), 20*float64(scale)+50
		for _, e := range plans {
			q := strings.Join(strings.Fields(e.Query), " ")
			if w := e.Plan.work(); w > limit {
				t.Errorf("%s looked at %.0f rows (at most %.0f): %s", name, w, limit, q)
			}
			// Rows an index scan passes over on the way (a condition on a later column of
			// the index) are not counted as rows: the pages it reads are.
			if b := e.Plan.SharedHit + e.Plan.SharedRead; b > blockLimit {
				t.Errorf("%s read %.0f pages (at most %.0f): %s", name, b, blockLimit, q)
			}
		}
	}
	fenced := func(r store.FencedResult, err error) (int64, error) { return r.Applied, err }
	now := time.Now()
	var tickets []store.TicketRow
	var statuses []store.AccountStatus
	var snaps []store.PositionsSnapshot
	var prot []store.ProtectionRow
	for _, o := range res.Owned[:batch] {
		tickets = append(tickets, store.TicketRow{FollowerID: o.ID, Epoch: o.Epoch, LinkID: links[o.ID], MasterTicket: 7, FollowerTicket: 9, Volume: 1})
		statuses = append(statuses, store.AccountStatus{ID: o.ID, Epoch: o.Epoch, Status: "copying", At: now, LastCopyAt: now})
		snaps = append(snaps, store.PositionsSnapshot{ID: o.ID, Epoch: o.Epoch, Positions: []byte(`[]`), SeenAt: now})
		prot = append(prot, store.ProtectionRow{FollowerID: o.ID, LinkID: links[o.ID], Epoch: o.Epoch, State: []byte(`{}`)})
	}
	step("ticket-map opens", batch, owned+batch, func() (int64, error) { return fenced(store.UpsertTicketsFenced(ctx, pool, "n1", tickets)) })
	step("takeover load", batch, owned+batch, func() (int64, error) {
		reqs := make([]store.LoadRequest, batch)
		for i, o := range res.Owned[:batch] {
			reqs[i] = store.LoadRequest{ID: o.ID, Tickets: true}
		}
		loads, err := store.LoadFollowers(ctx, pool, reqs)
		n := 0
		for _, l := range loads {
			if l.Err == nil && len(l.Tickets) == 1 {
				n++
			}
		}
		return int64(n), err
	})
	for i := range tickets {
		tickets[i].ClosedAt = now
	}
	step("ticket-map closes", batch, owned+batch, func() (int64, error) { return fenced(store.UpsertTicketsFenced(ctx, pool, "n1", tickets)) })
	step("statuses", batch, owned+batch, func() (int64, error) { return fenced(store.WriteStatusesFenced(ctx, pool, "n1", statuses)) })
	step("snapshots", batch, owned+batch, func() (int64, error) { return fenced(store.WriteSnapshotsFenced(ctx, pool, "n1", snaps)) })
	step("protection", batch, owned+batch, func() (int64, error) { return fenced(store.WriteProtectionFenced(ctx, pool, "n1", prot)) })
	// A FIX account's book: one position written per fill, the book read when the account
	// is taken up, each looked up by platform and login beside other books' positions.
	exec(`INSERT INTO fix_positions (account_id, ticket, node_id, lease_epoch, position)
		SELECT id, 1, 'n1', lease_epoch, '{}' FROM trading_accounts WHERE node_id = 'n1'`)
	book := res.Owned[batch/2]
	bookLogin := fmt.Sprintf("f%d", book.ID)
	// Seven writes: PostgreSQL keeps a generic plan of the statement, prepared by name,
	// from its sixth execution on.
	step("FIX book write", 7, 1, func() (int64, error) {
		for i := range 7 {
			ok, err := store.PutFIXPositionFenced(ctx, pool, "n1", book.Epoch, "mt5", bookLogin, store.FIXPosition{Ticket: int64(2 + i), Position: []byte(`{}`)})
			if !ok || err != nil {
				return int64(i), err
			}
		}
		return 7, nil
	})
	step("FIX book read", 8, 8, func() (int64, error) {
		ps, err := store.ReadFIXPositions(ctx, pool, "mt5", bookLogin)
		return int64(len(ps)), err
	})
	req.Held, req.Capacity = heldOf(res.Owned), owned+batch
	step("lease cycle: renew and claim", owned+batch, followers+owned, func() (int64, error) {
		r, err := store.LeaseCycle(ctx, pool, req)
		res = r
		return int64(r.Renewed + r.Claimed), err
	})
	req.Held = heldOf(res.Owned)
	step("hand-off", batch, owned+batch, func() (int64, error) { return store.HandOff(ctx, pool, "n1", req.Held[:batch]) })
	step("release all", owned, 2*owned, func() (int64, error) { return store.ReleaseAll(ctx, pool, "n1", req.Held[batch:]) })
}

// externalParam is how a plan shows a statement's parameter ($1, $2, ...): only a generic
// plan, made without the parameters' values, has one; a custom plan has their values.
var externalParam = regexp.MustCompile(`\$[1-9][0-9]*\b`)

// TestEveryExecutionIsPlannedForItsParameters: PostgreSQL plans a statement prepared by
// name for its parameters only for its first five executions; then it may keep a generic
// plan, made without them (for the renewal's join over unnest() a nested loop that took
// 9.6 s instead of 31 ms at 10,000 owned rows). The store prepares no statement by name
// but the FIX book's write, whose generic plan the plan test above checks: the tenth
// execution of the lease cycle, of a batch write (binary parameters) and of a query
// through pgx is still planned with its values.
func TestEveryExecutionIsPlannedForItsParameters(t *testing.T) {
	db := storetest.NewDB(t)
	ctx := context.Background()
	if _, err := db.Pool.Exec(ctx, `INSERT INTO trading_accounts (id, platform, role, login) SELECT g, 'mt5', 'follower', 'f' || g FROM generate_series(1, 50) g`); err != nil {
		t.Fatal(err)
	}
	pool, take := explainingPool(t, db)
	req := store.CycleRequest{Node: "n1", Platform: "mt5", Lease: time.Hour, Capacity: 50}
	res, err := store.LeaseCycle(ctx, pool, req)
	if err != nil || len(res.Owned) != 50 {
		t.Fatalf("claim: %d, %v", len(res.Owned), err)
	}
	req.Held = heldOf(res.Owned)
	statuses := make([]store.AccountStatus, len(res.Owned))
	for i, o := range res.Owned {
		statuses[i] = store.AccountStatus{ID: o.ID, Epoch: o.Epoch, Status: "copying", At: time.Now()}
	}
	take()
	for i := range 10 {
		if r, err := store.LeaseCycle(ctx, pool, req); err != nil || r.Renewed != 50 {
			t.Fatalf("renewal %d: %d renewed, %v", i, r.Renewed, err)
		}
		if r, err := store.WriteStatusesFenced(ctx, pool, "n1", statuses); err != nil || r.Applied != 50 {
			t.Fatalf("statuses %d: %d applied, %v", i, r.Applied, err)
		}
		var login string
		if err := pool.QueryRow(ctx, `SELECT login FROM trading_accounts WHERE id = $1`, 7).Scan(&login); err != nil || login != "f7" {
			t.Fatalf("lookup %d: %q, %v", i, login, err)
		}
	}
	plans := take()
	if len(plans) < 30 {
		t.Fatalf("auto_explain reported %d plans for 30 executions", len(plans))
	}
	for _, e := range plans {
		_, plan, _ := strings.Cut(e.notice, `"Plan"`)
		if p := externalParam.FindString(plan); p != "" {
			t.Errorf("a generic plan (it refers to %s): %s", p, strings.Join(strings.Fields(e.Query), " "))
		}
	}
}
