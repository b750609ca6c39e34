package actors

import (
	"errors"
	"testing"
	"time"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/reconcile"
	"github.com/snapcopier/copier/reconcile/follower"
	"github.com/snapcopier/copier/store"
)

// TestWriteQueueKeepsEachAccountsLatest: between two takes the queue holds, per account,
// the latest report, with the latest positions snapshot of the reports it replaced (a
// later report without a snapshot leaves the earlier one to be written), and one ticket
// row per (account, link, master ticket), the latest, in the order first changed.
func TestWriteQueueKeepsEachAccountsLatest(t *testing.T) {
	var q writeQueue
	rep := func(id int64, phase string, snapEpoch int64) report {
		r := report{status: store.AccountStatus{ID: id, Status: phase}}
		if snapEpoch != 0 {
			r.snap, r.hasSnap = snapshotUpdate{row: store.PositionsSnapshot{ID: id, Epoch: snapEpoch}}, true
		}
		return r
	}
	ticket := func(master, followerTicket int64) follower.TicketChange {
		return follower.TicketChange{Entry: reconcile.TicketMapEntry{LinkID: 1, MasterTicket: master, FollowerTicket: followerTicket}}
	}
	q.put(&accountRows{id: 1, epoch: 3, report: rep(1, "a", 3), hasReport: true,
		tickets: []follower.TicketChange{ticket(7, 70), ticket(8, 80)}})
	q.put(&accountRows{id: 1, epoch: 3, report: rep(1, "b", 0), hasReport: true, tickets: []follower.TicketChange{ticket(7, 71)}})
	q.put(&accountRows{id: 2, epoch: 5, report: rep(2, "c", 5), hasReport: true})
	q.put(&accountRows{id: 2, epoch: 5, report: rep(2, "d", 6), hasReport: true})
	q.put(&accountRows{id: 3, epoch: 1}) // nothing to write

	var tickets []store.TicketRow
	reports := q.take(0, false, nil, func(taken []*pendingRows) {
		for _, r := range taken {
			tickets = append(tickets, r.tickets...)
		}
	})
	byID := map[int64]report{}
	for _, r := range reports {
		if _, twice := byID[r.status.ID]; twice {
			t.Errorf("account %d reported twice in one take", r.status.ID)
		}
		byID[r.status.ID] = r
	}
	if len(byID) != 2 || byID[1].status.Status != "b" || byID[2].status.Status != "d" {
		t.Errorf("reports %+v, want account 1's b and account 2's d", reports)
	}
	if !byID[1].hasSnap || byID[1].snap.row.Epoch != 3 || !byID[2].hasSnap || byID[2].snap.row.Epoch != 6 {
		t.Errorf("reports %+v, want account 1's earlier snapshot and account 2's later one", reports)
	}
	if len(tickets) != 2 || tickets[0].MasterTicket != 7 || tickets[0].FollowerTicket != 71 || tickets[1].MasterTicket != 8 {
		t.Errorf("ticket rows %+v, want master 7 → 71, then master 8", tickets)
	}
	var again bool
	if left := q.take(0, true, nil, func([]*pendingRows) { again = true }); again || len(left) != 0 {
		t.Errorf("a second take found rows (%v, %d reports): the first did not empty the queue", again, len(left))
	}
}

// TestQueuedPositionsAreTheQueuesOwn: a report's positions are the reporting account's,
// which it goes on changing in place after the put; what the queue hands to the writer is
// the positions as they were put, for a first report and for one that replaces another.
func TestQueuedPositionsAreTheQueuesOwn(t *testing.T) {
	var q writeQueue
	ps := []broker.Position{{Ticket: 1, Volume: 1}}
	put := func() {
		q.put(&accountRows{id: 9, epoch: 1, hasReport: true, report: report{status: store.AccountStatus{ID: 9},
			snap: snapshotUpdate{row: store.PositionsSnapshot{ID: 9, Epoch: 1}, positions: ps}, hasSnap: true}})
	}
	takeOne := func() []broker.Position {
		t.Helper()
		reports := q.take(0, true, nil, func([]*pendingRows) {})
		if len(reports) != 1 {
			t.Fatalf("took %d reports, want 1", len(reports))
		}
		return reports[0].snap.positions
	}
	put()            // a first report
	ps[0].Volume = 2 // the account's next order changes its positions in place
	if got := takeOne(); len(got) != 1 || got[0].Volume != 1 {
		t.Fatalf("first report's positions %+v, want volume 1 as put", got)
	}
	put()
	ps[0].Volume = 3
	put() // replaces the held one
	ps[0].Volume = 4
	if got := takeOne(); len(got) != 1 || got[0].Volume != 3 {
		t.Fatalf("replacing report's positions %+v, want volume 3 as put", got)
	}
}

// TestWriteQueueHoldsReportsUntilDue: a periodic take leaves the reports not yet due in
// the queue, each still replaced by its account's later reports; a report due at once
// brings the account's report forward; a requested take (all) takes every report.
func TestWriteQueueHoldsReportsUntilDue(t *testing.T) {
	var q writeQueue
	put := func(id int64, phase string, due time.Duration) {
		q.put(&accountRows{id: id, epoch: 1, hasReport: true, report: report{status: store.AccountStatus{ID: id, Status: phase}, due: due}})
	}
	take := func(now time.Duration, all bool) map[int64]string {
		got := map[int64]string{}
		for _, r := range q.take(now, all, nil, func([]*pendingRows) {}) {
			got[r.status.ID] = r.status.Status
		}
		return got
	}
	for id := int64(1); id <= 3*writeShards; id++ { // several per shard, held and due mixed
		put(id, "held", 10*time.Second)
	}
	put(1, "due", 2*time.Second)           // due earlier than its held report: brings it forward
	put(2, "later", 20*time.Second)        // due later: the held report's time stands
	put(writeShards+1, "due", time.Second) // shares account 1's shard
	if got := take(5*time.Second, false); len(got) != 2 || got[1] != "due" || got[writeShards+1] != "due" {
		t.Fatalf("at 5 s took %v, want accounts 1 and %d (due)", got, writeShards+1)
	}
	put(3, "newer", 10*time.Second)
	if got := take(9*time.Second, false); len(got) != 0 {
		t.Fatalf("at 9 s took %v, want nothing (every report due at 10 s)", got)
	}
	got := take(10*time.Second, false)
	if len(got) != 3*writeShards-2 || got[2] != "later" || got[3] != "newer" || got[4] != "held" {
		t.Fatalf("at 10 s took %d reports (2: %q, 3: %q, 4: %q), want the %d held ones, each its latest", len(got), got[2], got[3], got[4], 3*writeShards-2)
	}
	put(5, "held", time.Hour)
	if got := take(0, true); len(got) != 1 || got[5] != "held" {
		t.Fatalf("a requested take took %v, want account 5's report though not due", got)
	}
	if got := take(2*time.Hour, false); len(got) != 0 {
		t.Fatalf("taken twice: %v", got)
	}
}

// TestReportIsHeldUnlessItsPhaseOrErrorChanged: an account's first report is due at once;
// one that changes only figures within StatusEvery waits until StatusEvery has passed;
// a changed phase, or a changed error in the same phase, is due at once again.
func TestReportIsHeldUnlessItsPhaseOrErrorChanged(t *testing.T) {
	e := &engine{cfg: Config{StatusEvery: time.Hour}, started: time.Now(), wall: time.Now}
	a := &accountActor{e: e, id: 7, epoch: 2, core: follower.New(follower.Options{})}
	next := func() report {
		var r report
		a.report(&r)
		return r
	}
	soon := func(what string, r report) {
		t.Helper()
		if r.due > e.elapsed() {
			t.Errorf("%s: due in %v, want at once", what, r.due-e.elapsed())
		}
	}
	held := func(what string, r report) {
		t.Helper()
		if r.due < e.elapsed()+50*time.Minute {
			t.Errorf("%s: due in %v, want about StatusEvery (1 h)", what, r.due-e.elapsed())
		}
	}
	first := next()
	soon("first report", first)
	if first.status.ID != 7 || first.status.Epoch != 2 {
		t.Errorf("first report's status %+v, want account 7 at epoch 2", first.status)
	}
	held("same phase and error", next())
	a.core.LoadFailed(errors.New("connection refused"))
	soon("phase changed", next())
	held("the same failure again", next())
	a.core.LoadFailed(errors.New("login refused"))
	soon("error changed", next())
	held("the same failure again", next())
}

// TestWriteQueuePutsBackAFailedWritesReports: a failed write's reports are due at once
// again; where the account queued a newer report since, the newer status stands, due at
// once, with the failed report's snapshot when it has none of its own.
func TestWriteQueuePutsBackAFailedWritesReports(t *testing.T) {
	var q writeQueue
	failed := func(id int64, phase string, snapEpoch int64) report {
		r := report{status: store.AccountStatus{ID: id, Status: phase}, due: time.Hour}
		if snapEpoch != 0 {
			r.snap, r.hasSnap = snapshotUpdate{row: store.PositionsSnapshot{ID: id, Epoch: snapEpoch}}, true
		}
		return r
	}
	q.put(&accountRows{id: 2, epoch: 1, hasReport: true, report: report{status: store.AccountStatus{ID: 2, Status: "newer"}, due: time.Hour}})
	q.putBack([]report{failed(1, "failed write", 4), failed(2, "older", 5)})
	got := map[int64]report{}
	for _, r := range q.take(0, false, nil, func([]*pendingRows) {}) {
		got[r.status.ID] = r
	}
	if len(got) != 2 {
		t.Fatalf("took %d reports at once, want both accounts' (%+v)", len(got), got)
	}
	if r := got[1]; r.status.Status != "failed write" || !r.hasSnap || r.snap.row.Epoch != 4 {
		t.Errorf("account 1: %+v, want the failed write's report with its snapshot", r)
	}
	if r := got[2]; r.status.Status != "newer" || !r.hasSnap || r.snap.row.Epoch != 5 {
		t.Errorf("account 2: %+v, want the newer status with the failed report's snapshot", r)
	}
}
