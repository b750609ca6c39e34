package actors

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/jackc/pgx/v5"
	"github.com/rs/zerolog"

	"github.com/snapcopier/copier/internal/testwait"
	"github.com/snapcopier/copier/leasekeeper"
	"github.com/snapcopier/copier/reconcile"
	"github.com/snapcopier/copier/reconcile/follower"
	"github.com/snapcopier/copier/store"
	"github.com/snapcopier/copier/store/storetest"
)

// TestFlushDuringAWriteWaitsForTheNextOne: a Flush that arrives while the StatusWriter's
// write is in flight is answered only after a write that took the rows queued before it.
// Answered when the write in flight ends, it would let a hand-off release a lease before
// the copy's ticket row is in the database. The write in flight is held on the follower's
// row lock, so the order of events is fixed: the first write takes row 10 and waits, row
// 11 is queued, the second Flush is asked, then the lock goes.
func TestFlushDuringAWriteWaitsForTheNextOne(t *testing.T) {
	ctx := context.Background()
	db, e, system, writer, link, epoch := newWriterFixture(t)
	queue := func(masterTicket int64) {
		e.writes.put(&accountRows{id: 1, epoch: epoch, tickets: []follower.TicketChange{
			{Entry: reconcile.TicketMapEntry{LinkID: link, MasterTicket: masterTicket, FollowerTicket: 100 + masterTicket, Volume: 1}}}})
	}
	flushed := func(f *actor.Future) {
		t.Helper()
		res, err := f.Result()
		if err != nil {
			t.Fatal(err)
		}
		if done, ok := res.(leasekeeper.Flushed); !ok || done.Err != nil {
			t.Fatalf("flush: %#v", res)
		}
	}

	queue(10)
	lock := lockFollower(t, db)
	first := system.Root.RequestFuture(writer, leasekeeper.Flush{}, time.Minute)
	testwait.For(t, "the first write waiting on the follower's row", 30*time.Second, func() (bool, string) {
		var waiting int
		if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting); err != nil {
			return false, err.Error()
		}
		return waiting > 0, fmt.Sprintf("%d statements waiting on a lock", waiting)
	})
	queue(11)
	second := system.Root.RequestFuture(writer, leasekeeper.Flush{}, time.Minute)
	if err := lock.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	flushed(first)
	flushed(second)
	var written []int64
	rows, err := db.Pool.Query(ctx, `SELECT master_ticket FROM copy_positions WHERE follower_id = 1 ORDER BY master_ticket`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var mt int64
		if err := rows.Scan(&mt); err != nil {
			t.Fatal(err)
		}
		written = append(written, mt)
	}
	if rows.Err() != nil || len(written) != 2 {
		t.Fatalf("after the second Flush want the rows of master tickets 10 and 11, got %v (%v)", written, rows.Err())
	}
}

// TestAFailedWriteIsWrittenByTheNextFlush: the ticket rows of a write that failed are
// written by the next flush, before the rows queued since (for a key in both, the newer
// row wins). The first write is held on the follower's row lock and its connection
// terminated, so it fails for certain.
func TestAFailedWriteIsWrittenByTheNextFlush(t *testing.T) {
	ctx := context.Background()
	db, e, system, writer, link, epoch := newWriterFixture(t)
	queue := func(masterTicket int64, volume float64) {
		e.writes.put(&accountRows{id: 1, epoch: epoch, tickets: []follower.TicketChange{
			{Entry: reconcile.TicketMapEntry{LinkID: link, MasterTicket: masterTicket, FollowerTicket: 100 + masterTicket, Volume: volume}}}})
	}

	queue(9, 1)
	queue(10, 1)
	failFlushOnTheLock(t, db, system, writer)
	queue(10, 2) // newer than the failed write's row of ticket 10
	queue(11, 1)
	if done := flushWriter(t, system, writer); done.Err != nil {
		t.Fatalf("second flush: %v", done.Err)
	}
	rows, err := db.Pool.Query(ctx, `SELECT master_ticket, volume FROM copy_positions WHERE follower_id = 1 ORDER BY master_ticket`)
	if err != nil {
		t.Fatal(err)
	}
	got := map[int64]float64{}
	for rows.Next() {
		var mt int64
		var v float64
		if err := rows.Scan(&mt, &v); err != nil {
			t.Fatal(err)
		}
		got[mt] = v
	}
	if rows.Err() != nil || len(got) != 3 || got[9] != 1 || got[10] != 2 || got[11] != 1 {
		t.Fatalf("want tickets 9, 10 and 11 with volumes 1, 2 and 1, got %v (%v)", got, rows.Err())
	}
}

// newWriterFixture is a database with follower 1 (claimed by n1 at epoch) linked to
// master 50 by link, and a StatusWriter of that node over an empty queue.
func newWriterFixture(t *testing.T) (*storetest.DB, *engine, *actor.ActorSystem, *actor.PID, int64, int64) {
	t.Helper()
	ctx := context.Background()
	db := storetest.NewDB(t)
	if _, err := db.Pool.Exec(ctx, `INSERT INTO trading_accounts (id, platform, role, login) VALUES (1, 'mt5', 'follower', 'f1'), (50, 'mt5', 'master', 'm50')`); err != nil {
		t.Fatal(err)
	}
	var link int64
	if err := db.Pool.QueryRow(ctx, `INSERT INTO copy_links (master_id, follower_id, magic) VALUES (50, 1, 7) RETURNING id`).Scan(&link); err != nil {
		t.Fatal(err)
	}
	cycle, err := store.LeaseCycle(ctx, db.Pool, store.CycleRequest{Node: "n1", Platform: "mt5", Lease: time.Hour, Capacity: 1})
	if err != nil || len(cycle.Owned) != 1 {
		t.Fatalf("claim: %+v, %v", cycle, err)
	}
	e := &engine{cfg: Config{NodeID: "n1", FlushEvery: time.Hour}, pool: db.Pool, log: zerolog.Nop(), metrics: &Metrics{}, writes: &writeQueue{}}
	system := actor.NewActorSystem(actor.WithLoggerFactory(slogBridge(e.log)))
	writer := system.Root.Spawn(actor.PropsFromProducer(newStatusWriter(e)))
	t.Cleanup(func() {
		_ = system.Root.StopFuture(writer).Wait() // ends its ticker
		system.Shutdown()
	})
	return db, e, system, writer, link, cycle.Owned[0].Epoch
}

// lockFollower holds follower 1's row FOR UPDATE until the returned transaction ends (or
// the test does), so a fenced write of its rows waits.
func lockFollower(t *testing.T, db *storetest.DB) pgx.Tx {
	t.Helper()
	ctx := context.Background()
	lock, err := db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lock.Rollback(ctx) })
	if _, err := lock.Exec(ctx, `SELECT id FROM trading_accounts WHERE id = 1 FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	return lock
}

// TestAFlushWritesReportsNotYetDue: a requested Flush (before a lease is let go) writes
// every report queued before it, the ones a periodic flush would still hold too: held
// back, the follower's last status and positions would be lost with the lease.
func TestAFlushWritesReportsNotYetDue(t *testing.T) {
	ctx := context.Background()
	db, e, system, writer, _, epoch := newWriterFixture(t)
	e.started = time.Now()
	rep := copyingReport(epoch, 1234)
	rep.snap, rep.hasSnap = snapshotUpdate{row: store.PositionsSnapshot{ID: 1, Epoch: epoch, SeenAt: time.Now()}}, true
	rep.due = e.elapsed() + time.Hour
	e.writes.put(&accountRows{id: 1, epoch: epoch, hasReport: true, report: rep})
	if done := flushWriter(t, system, writer); done.Err != nil {
		t.Fatalf("flush: %v", done.Err)
	}
	var status string
	var balance *float64
	if err := db.Pool.QueryRow(ctx, `SELECT status, balance FROM trading_accounts WHERE id = 1`).Scan(&status, &balance); err != nil {
		t.Fatal(err)
	}
	if status != "copying" || balance == nil || *balance != 1234 {
		t.Errorf("after the flush the status row says %q, balance %v: want the queued report's", status, balance)
	}
	if _, ok, err := store.ReadPositionsSnapshot(ctx, db.Pool, 1); err != nil || !ok {
		t.Errorf("after the flush no positions snapshot (%v)", err)
	}
}

// TestAFailedReportIsWrittenByTheNextFlush: the reports of a write that failed are written
// by the next flush: an account that goes quiet after the failure would otherwise keep its
// stale status in the database. The status write is held on the follower's row lock and
// its connection terminated, so it fails for certain.
func TestAFailedReportIsWrittenByTheNextFlush(t *testing.T) {
	ctx := context.Background()
	db, e, system, writer, _, epoch := newWriterFixture(t)
	e.started = time.Now()
	e.writes.put(&accountRows{id: 1, epoch: epoch, hasReport: true, report: copyingReport(epoch, 4321)})
	failFlushOnTheLock(t, db, system, writer)
	if done := flushWriter(t, system, writer); done.Err != nil {
		t.Fatalf("second flush: %v", done.Err)
	}
	var balance *float64
	if err := db.Pool.QueryRow(ctx, `SELECT balance FROM trading_accounts WHERE id = 1`).Scan(&balance); err != nil {
		t.Fatal(err)
	}
	if balance == nil || *balance != 4321 {
		t.Errorf("after the second flush the balance is %v, want the failed write's report (4321)", balance)
	}
}

// copyingReport is account 1's report at epoch: copying, with the balance given.
func copyingReport(epoch int64, balance float64) report {
	return report{status: store.AccountStatus{ID: 1, Epoch: epoch, Status: "copying", Balance: balance, Equity: balance - 34, At: time.Now()}}
}

// flushWriter asks the StatusWriter for a Flush and returns its answer.
func flushWriter(t *testing.T, system *actor.ActorSystem, writer *actor.PID) leasekeeper.Flushed {
	t.Helper()
	res, err := system.Root.RequestFuture(writer, leasekeeper.Flush{}, time.Minute).Result()
	if err != nil {
		t.Fatal(err)
	}
	done, ok := res.(leasekeeper.Flushed)
	if !ok {
		t.Fatalf("flush answered %#v", res)
	}
	return done
}

// failFlushOnTheLock makes one Flush fail for certain: its write waits on follower 1's
// row lock, its connection is terminated there, and the lock goes once the Flush has
// answered with the error.
func failFlushOnTheLock(t *testing.T, db *storetest.DB, system *actor.ActorSystem, writer *actor.PID) {
	t.Helper()
	ctx := context.Background()
	lock := lockFollower(t, db)
	failed := make(chan leasekeeper.Flushed, 1)
	go func() {
		res, _ := system.Root.RequestFuture(writer, leasekeeper.Flush{}, time.Minute).Result()
		done, _ := res.(leasekeeper.Flushed)
		failed <- done
	}()
	testwait.For(t, "the write waiting on the follower's row, then terminated", 30*time.Second, func() (bool, string) {
		var ended int
		if err := db.Pool.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&ended); err != nil {
			return false, err.Error()
		}
		return ended > 0, fmt.Sprintf("%d writes terminated", ended)
	})
	if done := <-failed; done.Err == nil {
		t.Fatal("the terminated write was answered as written")
	}
	if err := lock.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
}
