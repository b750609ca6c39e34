package store_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/snapcopier/copier/store"
	"github.com/snapcopier/copier/store/storetest"
)

func TestMain(m *testing.M) { storetest.Main(m) }

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// seedAccounts inserts n accounts with ids from..from+n-1.
func seedAccounts(t *testing.T, pool *pgxpool.Pool, platform, role string, from, n int64) {
	t.Helper()
	_, err := pool.Exec(ctxT(t), `
		INSERT INTO trading_accounts (id, platform, role, login)
		SELECT g, $1, $2, 'login-' || g FROM generate_series($3::bigint, $4::bigint) g`,
		platform, role, from, from+n-1)
	if err != nil {
		t.Fatalf("seed: %v", err)
	}
}

func heldOf(owned []store.Owned) []store.Held {
	h := make([]store.Held, len(owned))
	for i, o := range owned {
		h[i] = store.Held{ID: o.ID, Epoch: o.Epoch}
	}
	return h
}

func cycle(t *testing.T, pool *pgxpool.Pool, node string, held []store.Held, capacity int) store.CycleResult {
	t.Helper()
	res, err := store.LeaseCycle(ctxT(t), pool, store.CycleRequest{Node: node, Platform: "mt5", Lease: time.Minute, Held: held, Capacity: capacity})
	if err != nil {
		t.Fatalf("cycle %s: %v", node, err)
	}
	return res
}

// expire moves lease_until of the given accounts into the past, as if time had passed.
func expire(t *testing.T, pool *pgxpool.Pool, ids ...int64) {
	t.Helper()
	if _, err := pool.Exec(ctxT(t), `UPDATE trading_accounts SET lease_until = now() - interval '1 second' WHERE id = ANY($1)`, ids); err != nil {
		t.Fatal(err)
	}
}

func TestMigrateIsIdempotentAndSafeConcurrently(t *testing.T) {
	t.Parallel()
	db := storetest.NewDB(t) // already migrated from the template
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			applied, err := store.Migrate(ctxT(t), db.NewPool(t, store.Options{}))
			if err == nil && len(applied) != 0 {
				err = errors.New("migrations applied twice")
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	migs, err := store.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := db.Pool.QueryRow(ctxT(t), `SELECT count(*) FROM schema_migrations`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != len(migs) {
		t.Fatalf("schema_migrations has %d rows, want %d", n, len(migs))
	}
}

func TestMigrateFreshDatabaseConcurrently(t *testing.T) {
	t.Parallel()
	db := storetest.NewDB(t)
	// Empty the cloned schema so the racing migrations start from nothing.
	if _, err := db.Pool.Exec(ctxT(t), `DROP SCHEMA public CASCADE; CREATE SCHEMA public`); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	total := 0
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			applied, err := store.Migrate(ctxT(t), db.NewPool(t, store.Options{}))
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			total += len(applied)
			mu.Unlock()
		}()
	}
	wg.Wait()
	migs, _ := store.Migrations()
	if total != len(migs) {
		t.Fatalf("racing migrations applied %d in total, want each of %d exactly once", total, len(migs))
	}
}

func TestOpenRejectsBadURL(t *testing.T) {
	for _, u := range []string{"", "postgres://user@host:notaport/db", "::::"} {
		if _, err := store.Open(context.Background(), u, store.Options{}); !errors.Is(err, store.ErrBadURL) {
			t.Errorf("Open(%q) = %v, want ErrBadURL", u, err)
		}
	}
}

func TestCycleClaimsRenewsAndReturnsOwned(t *testing.T) {
	t.Parallel()
	db := storetest.NewDB(t)
	seedAccounts(t, db.Pool, "mt5", "follower", 1, 10)
	seedAccounts(t, db.Pool, "mt5", "master", 100, 3)
	seedAccounts(t, db.Pool, "mt4", "follower", 200, 5)

	res := cycle(t, db.Pool, "n1", nil, 4)
	if res.Claimed != 4 || len(res.Owned) != 4 {
		t.Fatalf("first cycle: %+v", res)
	}
	for _, o := range res.Owned {
		if !o.Claimed || o.Epoch != 1 || o.ID > 10 {
			t.Fatalf("unexpected owned %+v", o)
		}
	}
	res2 := cycle(t, db.Pool, "n1", heldOf(res.Owned), 6)
	if res2.Renewed != 4 || res2.Claimed != 2 || len(res2.Owned) != 6 {
		t.Fatalf("second cycle: %+v", res2)
	}
	for _, o := range res2.Owned[:4] {
		if o.Claimed || o.Epoch != 1 {
			t.Fatalf("renewed lease changed: %+v", o)
		}
	}
	// A node with room for everything takes the remaining followers and nothing else:
	// masters are never leased, other platforms are not its.
	if res3 := cycle(t, db.Pool, "n2", nil, 100); res3.Claimed != 4 {
		t.Fatalf("a node with free capacity claimed %d, want the 4 free followers: %+v", res3.Claimed, res3)
	}
	var masters, others int
	if err := db.Pool.QueryRow(ctxT(t), `SELECT count(*) FILTER (WHERE role = 'master' AND node_id IS NOT NULL),
		count(*) FILTER (WHERE platform <> 'mt5' AND node_id IS NOT NULL) FROM trading_accounts`).Scan(&masters, &others); err != nil {
		t.Fatal(err)
	}
	if masters != 0 || others != 0 {
		t.Fatalf("claimed %d masters and %d other-platform accounts", masters, others)
	}
}

func TestSwitchedOffAccountsAreReleasedInTheSameCycle(t *testing.T) {
	t.Parallel()
	db := storetest.NewDB(t)
	seedAccounts(t, db.Pool, "mt5", "follower", 1, 5)
	res := cycle(t, db.Pool, "n1", nil, 5)
	if _, err := db.Pool.Exec(ctxT(t), `UPDATE trading_accounts SET enabled = false WHERE id IN (2, 4)`); err != nil {
		t.Fatal(err)
	}
	res = cycle(t, db.Pool, "n1", heldOf(res.Owned), 5)
	if len(res.Released) != 2 || res.Released[0] != 2 || res.Released[1] != 4 {
		t.Fatalf("released %v, want [2 4]", res.Released)
	}
	if len(res.Owned) != 3 {
		t.Fatalf("owned %d, want 3", len(res.Owned))
	}
	// Never claimed while off, by anyone, even with spare capacity.
	other := cycle(t, db.Pool, "n2", nil, 10)
	if len(other.Owned) != 0 {
		t.Fatalf("n2 claimed %+v while the free accounts are switched off", other.Owned)
	}
	var owned int
	if err := db.Pool.QueryRow(ctxT(t), `SELECT count(*) FROM trading_accounts WHERE NOT enabled AND node_id IS NOT NULL`).Scan(&owned); err != nil {
		t.Fatal(err)
	}
	if owned != 0 {
		t.Fatalf("%d switched-off accounts still owned", owned)
	}
}

func TestExpiredLeaseMovesToAnotherNodeWithNewEpoch(t *testing.T) {
	t.Parallel()
	db := storetest.NewDB(t)
	seedAccounts(t, db.Pool, "mt5", "follower", 1, 3)
	a := cycle(t, db.Pool, "a", nil, 3)
	expire(t, db.Pool, 1, 2, 3) // node a stopped renewing long ago
	b := cycle(t, db.Pool, "b", nil, 3)
	if b.Claimed != 3 {
		t.Fatalf("b claimed %d, want 3", b.Claimed)
	}
	for _, o := range b.Owned {
		if o.Epoch != 2 {
			t.Fatalf("takeover epoch %d, want 2", o.Epoch)
		}
	}
	a2 := cycle(t, db.Pool, "a", heldOf(a.Owned), 3)
	if len(a2.Owned) != 0 || a2.Renewed != 0 {
		t.Fatalf("old owner still sees %+v", a2.Owned)
	}
}

func TestSameNodeIDCannotRenewAnotherProcessLease(t *testing.T) {
	t.Parallel()
	db := storetest.NewDB(t)
	seedAccounts(t, db.Pool, "mt5", "follower", 1, 4)
	p1 := db.NewPool(t, store.Options{})
	p2 := db.NewPool(t, store.Options{})
	first := cycle(t, p1, "mt5-host", nil, 2)
	// A second process with the same default node id and no held leases: it must not
	// see or renew the first one's leases, only claim free ones.
	second := cycle(t, p2, "mt5-host", nil, 4)
	for _, o := range second.Owned {
		for _, f := range first.Owned {
			if o.ID == f.ID {
				t.Fatalf("second process sees %d owned by the first", o.ID)
			}
		}
	}
	// Forged held pairs with a wrong epoch renew nothing.
	forged := []store.Held{{ID: first.Owned[0].ID, Epoch: first.Owned[0].Epoch + 1}}
	if res := cycle(t, p2, "mt5-host", forged, 0); res.Renewed != 0 || len(res.Owned) != 0 {
		t.Fatalf("forged renewal succeeded: %+v", res)
	}
	// A restarted first process (empty memory) claims only after expiry, with a new epoch.
	expire(t, db.Pool, first.Owned[0].ID)
	again := cycle(t, p1, "mt5-host", nil, 1)
	if len(again.Owned) != 1 || again.Owned[0].ID != first.Owned[0].ID || again.Owned[0].Epoch != first.Owned[0].Epoch+1 {
		t.Fatalf("reclaim after restart: %+v", again.Owned)
	}
	// And the stale pair of its previous life no longer renews.
	if res := cycle(t, p1, "mt5-host", heldOf(first.Owned[:1]), 0); res.Renewed != 0 {
		t.Fatalf("stale epoch renewed: %+v", res)
	}
}

func TestReleaseAllMakesRowsClaimableAtOnce(t *testing.T) {
	t.Parallel()
	db := storetest.NewDB(t)
	seedAccounts(t, db.Pool, "mt5", "follower", 1, 5)
	a := cycle(t, db.Pool, "a", nil, 5)
	n, err := store.ReleaseAll(ctxT(t), db.Pool, "a", heldOf(a.Owned))
	if err != nil || n != 5 {
		t.Fatalf("ReleaseAll = %d, %v", n, err)
	}
	b := cycle(t, db.Pool, "b", nil, 5)
	if b.Claimed != 5 {
		t.Fatalf("b claimed %d after release, want 5", b.Claimed)
	}
	// Releasing again with stale pairs touches nothing.
	if n, err := store.ReleaseAll(ctxT(t), db.Pool, "a", heldOf(a.Owned)); err != nil || n != 0 {
		t.Fatalf("stale ReleaseAll = %d, %v", n, err)
	}
}

func TestLeaseCycleRejectsBadRequest(t *testing.T) {
	t.Parallel()
	db := storetest.NewDB(t)
	bad := []store.CycleRequest{
		{Node: "", Platform: "mt5", Lease: time.Minute, Capacity: 1},
		{Node: "n", Platform: "", Lease: time.Minute, Capacity: 1},
		{Node: "n", Platform: "mt5", Lease: 0, Capacity: 1},
		{Node: "n", Platform: "mt5", Lease: time.Minute, Capacity: -1},
	}
	for _, r := range bad {
		if _, err := store.LeaseCycle(ctxT(t), db.Pool, r); !errors.Is(err, store.ErrBadCycle) {
			t.Errorf("%+v: err %v, want ErrBadCycle", r, err)
		}
	}
}

func TestLeaseUntilUsesDatabaseClock(t *testing.T) {
	t.Parallel()
	db := storetest.NewDB(t)
	seedAccounts(t, db.Pool, "mt5", "follower", 1, 1)
	cycle(t, db.Pool, "n", nil, 1)
	var ahead float64
	if err := db.Pool.QueryRow(ctxT(t), `SELECT extract(epoch FROM lease_until - now()) FROM trading_accounts WHERE id = 1`).Scan(&ahead); err != nil {
		t.Fatal(err)
	}
	if ahead < 50 || ahead > 60 {
		t.Fatalf("lease_until is %.1fs ahead of now(), want about 60s", ahead)
	}
}

// The renewal join's generic plan is a nested loop (9.6 s instead of 31 ms at 10,000 owned
// rows, see BENCHMARKS.md): every pool store opens must plan each execution afresh, and
// bound its sessions.
func TestPoolSessionSettings(t *testing.T) {
	t.Parallel()
	db := storetest.NewDB(t)
	pool := db.NewPool(t, store.Options{IdleInTransactionTimeout: 7 * time.Second})
	var mode, idle string
	if err := pool.QueryRow(ctxT(t), `SELECT current_setting('plan_cache_mode'), current_setting('idle_in_transaction_session_timeout')`).Scan(&mode, &idle); err != nil {
		t.Fatal(err)
	}
	if mode != "auto" || idle != "7s" {
		t.Fatalf("plan_cache_mode %q, idle_in_transaction_session_timeout %q", mode, idle)
	}
}
