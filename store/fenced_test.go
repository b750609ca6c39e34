package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/snapcopier/copier/store"
	"github.com/snapcopier/copier/store/storetest"
)

func TestFencedStatusWrites(t *testing.T) {
	t.Parallel()
	db := storetest.NewDB(t)
	seedAccounts(t, db.Pool, "mt5", "follower", 1, 2)
	a := cycle(t, db.Pool, "a", nil, 2)
	now := time.Now()
	row := func(id, epoch int64, status string) store.AccountStatus {
		return store.AccountStatus{ID: id, Epoch: epoch, Status: status, Balance: 1000, Equity: 990, At: now}
	}
	// Owner at the right epoch: written.
	res, err := store.WriteStatusesFenced(ctxT(t), db.Pool, "a", []store.AccountStatus{row(1, 1, "ok"), row(2, 1, "ok")})
	if err != nil || res.Applied != 2 || res.Refused != 0 {
		t.Fatalf("owner write: %+v, %v", res, err)
	}
	// Stale epoch, and another node id: refused, nothing changes.
	res, err = store.WriteStatusesFenced(ctxT(t), db.Pool, "a", []store.AccountStatus{row(1, 0, "stale")})
	if err != nil || res.Applied != 0 || res.Refused != 1 {
		t.Fatalf("stale epoch write: %+v, %v", res, err)
	}
	res, err = store.WriteStatusesFenced(ctxT(t), db.Pool, "b", []store.AccountStatus{row(2, 1, "intruder")})
	if err != nil || res.Applied != 0 || res.Refused != 1 {
		t.Fatalf("foreign node write: %+v, %v", res, err)
	}
	// After a takeover the old owner's queued write cannot land.
	expire(t, db.Pool, 1)
	b := cycle(t, db.Pool, "b", nil, 1)
	if len(b.Owned) != 1 || b.Owned[0].ID != 1 {
		t.Fatalf("takeover: %+v", b.Owned)
	}
	if _, err := store.WriteStatusesFenced(ctxT(t), db.Pool, "b", []store.AccountStatus{row(1, b.Owned[0].Epoch, "new-owner")}); err != nil {
		t.Fatal(err)
	}
	res, err = store.WriteStatusesFenced(ctxT(t), db.Pool, "a", []store.AccountStatus{row(1, a.Owned[0].Epoch, "old-owner")})
	if err != nil || res.Applied != 0 {
		t.Fatalf("old owner's write after takeover: %+v, %v", res, err)
	}
	var s1, s2 string
	if err := db.Pool.QueryRow(ctxT(t), `SELECT (SELECT status FROM trading_accounts WHERE id = 1), (SELECT status FROM trading_accounts WHERE id = 2)`).Scan(&s1, &s2); err != nil {
		t.Fatal(err)
	}
	if s1 != "new-owner" || s2 != "ok" {
		t.Fatalf("statuses %q %q, want new-owner ok", s1, s2)
	}
}

// An unknown balance and equity (a venue that does not say them) are written as NULL,
// never as 0; a known reading after it is written as usual.
func TestStatusWithUnknownEquity(t *testing.T) {
	t.Parallel()
	db := storetest.NewDB(t)
	seedAccounts(t, db.Pool, "mt5", "follower", 1, 1)
	cycle(t, db.Pool, "a", nil, 1)
	read := func() (b, e *float64) {
		t.Helper()
		if err := db.Pool.QueryRow(ctxT(t), `SELECT balance, equity FROM trading_accounts WHERE id = 1`).Scan(&b, &e); err != nil {
			t.Fatal(err)
		}
		return b, e
	}
	write := func(r store.AccountStatus) {
		t.Helper()
		r.ID, r.Epoch, r.Status, r.At = 1, 1, "copying", time.Now()
		if res, err := store.WriteStatusesFenced(ctxT(t), db.Pool, "a", []store.AccountStatus{r}); err != nil || res.Applied != 1 {
			t.Fatalf("write: %+v, %v", res, err)
		}
	}
	write(store.AccountStatus{Balance: 1000, Equity: 990})
	write(store.AccountStatus{EquityUnknown: true})
	if b, e := read(); b != nil || e != nil {
		t.Fatalf("balance %v, equity %v: want NULL for an unknown equity", b, e)
	}
	write(store.AccountStatus{Balance: 1000, Equity: 990})
	if b, e := read(); b == nil || e == nil || *b != 1000 || *e != 990 {
		t.Fatalf("balance %v, equity %v: want 1000 / 990", b, e)
	}
}

func TestFencedTicketUpserts(t *testing.T) {
	t.Parallel()
	db, link, ep := ownedFollowerWithLink(t)
	rows := []store.TicketRow{
		{FollowerID: 1, Epoch: ep, LinkID: link, MasterTicket: 10, FollowerTicket: 100, Volume: 1},
		{FollowerID: 1, Epoch: ep, LinkID: link, MasterTicket: 11, FollowerTicket: 101, Volume: 2},
		{FollowerID: 1, Epoch: ep, LinkID: link, MasterTicket: 11, FollowerTicket: 101, Volume: 1.5}, // same key: last wins
	}
	res, err := store.UpsertTicketsFenced(ctxT(t), db.Pool, "a", rows)
	if err != nil || res.Applied != 2 {
		t.Fatalf("owner upsert: %+v, %v", res, err)
	}
	closed := store.TicketRow{FollowerID: 1, Epoch: ep, LinkID: link, MasterTicket: 10, FollowerTicket: 100, Volume: 1, ClosedAt: time.Now()}
	if res, err := store.UpsertTicketsFenced(ctxT(t), db.Pool, "a", []store.TicketRow{closed}); err != nil || res.Applied != 1 {
		t.Fatalf("close upsert: %+v, %v", res, err)
	}
	stale := []store.TicketRow{
		{FollowerID: 1, Epoch: ep - 1, LinkID: link, MasterTicket: 12, FollowerTicket: 102, Volume: 1},
	}
	if res, err := store.UpsertTicketsFenced(ctxT(t), db.Pool, "a", stale); err != nil || res.Applied != 0 || res.Refused != 1 {
		t.Fatalf("stale upsert: %+v, %v", res, err)
	}
	if res, err := store.UpsertTicketsFenced(ctxT(t), db.Pool, "b", rows[:1]); err != nil || res.Applied != 0 {
		t.Fatalf("foreign upsert: %+v, %v", res, err)
	}
	var open, total int
	var vol float64
	if err := db.Pool.QueryRow(ctxT(t), `SELECT count(*) FILTER (WHERE closed_at IS NULL), count(*),
		(SELECT volume FROM copy_positions WHERE master_ticket = 11) FROM copy_positions`).Scan(&open, &total, &vol); err != nil {
		t.Fatal(err)
	}
	if open != 1 || total != 2 || vol != 1.5 {
		t.Fatalf("ticket map: open %d total %d vol %v", open, total, vol)
	}
}

func TestFencedPositionsSnapshots(t *testing.T) {
	t.Parallel()
	db := storetest.NewDB(t)
	seedAccounts(t, db.Pool, "mt5", "follower", 1, 2)
	a := cycle(t, db.Pool, "a", nil, 2)
	seen := time.Now().Truncate(time.Microsecond)
	snap := func(id, epoch int64, doc string) store.PositionsSnapshot {
		return store.PositionsSnapshot{ID: id, Epoch: epoch, Positions: []byte(doc), SeenAt: seen}
	}
	res, err := store.WriteSnapshotsFenced(ctxT(t), db.Pool, "a", []store.PositionsSnapshot{snap(1, 1, `[{"ticket":7}]`), snap(2, 1, `[]`)})
	if err != nil || res.Applied != 2 || res.Refused != 0 {
		t.Fatalf("owner write: %+v, %v", res, err)
	}
	res, err = store.WriteSnapshotsFenced(ctxT(t), db.Pool, "b", []store.PositionsSnapshot{snap(2, 1, `[{"ticket":666}]`)})
	if err != nil || res.Applied != 0 || res.Refused != 1 {
		t.Fatalf("foreign node write: %+v, %v", res, err)
	}
	// The same node, a stale epoch (a queued write from before it lost and claimed again).
	res, err = store.WriteSnapshotsFenced(ctxT(t), db.Pool, "a", []store.PositionsSnapshot{snap(2, 0, `[{"ticket":666}]`)})
	if err != nil || res.Applied != 0 || res.Refused != 1 {
		t.Fatalf("stale epoch write: %+v, %v", res, err)
	}
	// After a takeover the old owner's queued snapshot cannot land.
	expire(t, db.Pool, 1)
	b := cycle(t, db.Pool, "b", nil, 1)
	if _, err := store.WriteSnapshotsFenced(ctxT(t), db.Pool, "b", []store.PositionsSnapshot{snap(1, b.Owned[0].Epoch, `[{"ticket":8}]`)}); err != nil {
		t.Fatal(err)
	}
	res, err = store.WriteSnapshotsFenced(ctxT(t), db.Pool, "a", []store.PositionsSnapshot{snap(1, a.Owned[0].Epoch, `[{"ticket":7}]`)})
	if err != nil || res.Applied != 0 || res.Refused != 1 {
		t.Fatalf("old owner's snapshot after takeover: %+v, %v", res, err)
	}
	got, ok, err := store.ReadPositionsSnapshot(ctxT(t), db.Pool, 1)
	if err != nil || !ok || got.Node != "b" || got.Epoch != b.Owned[0].Epoch || string(got.Positions) != `[{"ticket": 8}]` || !got.SeenAt.Equal(seen) {
		t.Fatalf("snapshot of 1: %+v %s, %v, %v", got, got.Positions, ok, err)
	}
	if _, ok, err := store.ReadPositionsSnapshot(ctxT(t), db.Pool, 99); ok || err != nil {
		t.Fatalf("no snapshot expected for 99: %v, %v", ok, err)
	}
}

// TestFencedWritesDoNotWaitForRenewals: a positions snapshot, a protection state and a
// ticket row are written while the owner's renewal of the same account is still open (its
// row lock held), and a claim of the account still cannot pass a fenced write's lock.
func TestFencedWritesDoNotWaitForRenewals(t *testing.T) {
	t.Parallel()
	db := storetest.NewDB(t)
	ctx := ctxT(t)
	seedAccounts(t, db.Pool, "mt5", "master", 100, 1)
	seedAccounts(t, db.Pool, "mt5", "follower", 1, 1)
	var link int64
	if err := db.Pool.QueryRow(ctx, `INSERT INTO copy_links (master_id, follower_id, magic) VALUES (100, 1, 7) RETURNING id`).Scan(&link); err != nil {
		t.Fatal(err)
	}
	a := cycle(t, db.Pool, "a", nil, 1)
	epoch := a.Owned[0].Epoch
	renewal, err := db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = renewal.Rollback(ctx) }()
	if _, err := renewal.Exec(ctx, `UPDATE trading_accounts SET lease_until = now() + interval '1 minute' WHERE id = 1`); err != nil {
		t.Fatal(err)
	}
	// Were a write to wait for the open renewal, it would wait until this context ends.
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	snap, err := store.WriteSnapshotsFenced(wctx, db.Pool, "a", []store.PositionsSnapshot{{ID: 1, Epoch: epoch, Positions: []byte(`[]`), SeenAt: time.Now()}})
	if err != nil || snap.Applied != 1 {
		t.Fatalf("snapshot beside an open renewal: %+v, %v", snap, err)
	}
	prot, err := store.WriteProtectionFenced(wctx, db.Pool, "a", []store.ProtectionRow{{FollowerID: 1, Epoch: epoch, State: []byte(`{}`)}})
	if err != nil || prot.Applied != 1 {
		t.Fatalf("protection state beside an open renewal: %+v, %v", prot, err)
	}
	tk, err := store.UpsertTicketsFenced(wctx, db.Pool, "a", []store.TicketRow{{FollowerID: 1, Epoch: epoch, LinkID: link, MasterTicket: 5, FollowerTicket: 6, Volume: 1}})
	if err != nil || tk.Applied != 1 {
		t.Fatalf("ticket beside an open renewal: %+v, %v", tk, err)
	}
	if err := renewal.Commit(ctx); err != nil {
		t.Fatal(err)
	}

	// The lock a fenced write takes still stops a claim: a claim's FOR UPDATE SKIP LOCKED
	// passes over a row held FOR KEY SHARE.
	expire(t, db.Pool, 1)
	writer, err := db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = writer.Rollback(ctx) }()
	if _, err := writer.Exec(ctx, `SELECT id FROM trading_accounts WHERE id = 1 FOR KEY SHARE`); err != nil {
		t.Fatal(err)
	}
	if b := cycle(t, db.Pool, "b", nil, 1); len(b.Owned) != 0 {
		t.Fatalf("a claim took an account under a fenced write's lock: %+v", b.Owned)
	}
}

// TestFencedTicketUpsertsInBatches: a write larger than one statement's batch stores every
// row, a key repeated in a later batch ends with the later row, and the counts add up.
func TestFencedTicketUpsertsInBatches(t *testing.T) {
	t.Parallel()
	db, link, ep := ownedFollowerWithLink(t)
	const n = 2500 // two full batches and a part
	var rows []store.TicketRow
	for i := range int64(n) {
		rows = append(rows, store.TicketRow{FollowerID: 1, Epoch: ep, LinkID: link, MasterTicket: 1 + i, FollowerTicket: 10_000 + i, Volume: 1})
	}
	rows = append(rows, store.TicketRow{FollowerID: 1, Epoch: ep, LinkID: link, MasterTicket: 1, FollowerTicket: 10_000, Volume: 2}) // key of the first batch, in the last
	res, err := store.UpsertTicketsFenced(ctxT(t), db.Pool, "a", rows)
	if err != nil || res.Applied != n+1 || res.Refused != 0 {
		t.Fatalf("upsert of %d rows: %+v, %v", len(rows), res, err)
	}
	var total int
	var vol float64
	if err := db.Pool.QueryRow(ctxT(t), `SELECT count(*), (SELECT volume FROM copy_positions WHERE master_ticket = 1) FROM copy_positions`).Scan(&total, &vol); err != nil {
		t.Fatal(err)
	}
	if total != n || vol != 2 {
		t.Fatalf("ticket map: %d rows, first volume %v; want %d and 2 (the later row)", total, vol, n)
	}
}

// ownedFollowerWithLink sets up follower 1 copying master 50 (the returned link), owned by
// node "a" at the returned epoch.
func ownedFollowerWithLink(t *testing.T) (db *storetest.DB, link, epoch int64) {
	t.Helper()
	db = storetest.NewDB(t)
	seedAccounts(t, db.Pool, "mt5", "follower", 1, 1)
	seedAccounts(t, db.Pool, "mt5", "master", 50, 1)
	if err := db.Pool.QueryRow(ctxT(t), `INSERT INTO copy_links (master_id, follower_id, magic) VALUES (50, 1, 7) RETURNING id`).Scan(&link); err != nil {
		t.Fatal(err)
	}
	return db, link, cycle(t, db.Pool, "a", nil, 1).Owned[0].Epoch
}
