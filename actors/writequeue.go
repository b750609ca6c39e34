package actors

import (
	"slices"
	"sync"
	"time"

	"github.com/snapcopier/copier/reconcile/follower"
	"github.com/snapcopier/copier/store"
)

// writeQueue holds the rows the AccountActors leave for the StatusWriter until its next
// flush: the latest ticket-map row per ticket, in the order the tickets first changed, the
// latest protection state per scope, and each account's latest report (status and
// positions snapshot). A step puts its rows under one shard's lock; sent as a message
// instead, they were boxed and woke the writer's mailbox for every order, though the
// writer needs them only when it flushes. An account's rows always go to the same shard,
// so they are taken in the order the account put them.
type writeQueue struct {
	shards [writeShards]writeShard
}

// writeShards spreads the accounts' puts over locks: a flush holds each lock only to
// swap two sets of maps.
const writeShards = 32

type writeShard struct {
	mu   sync.Mutex
	rows pendingRows
	// spare is the set the next take swaps in: the one the take before drained and
	// cleared, so both keep the room they grew to. Only take touches it.
	spare pendingRows
	// reports are the accounts' latest reports, one per account (reportAt indexes them by
	// account id). They are not swapped: a take leaves the reports not yet due in place.
	// A slice, not a map of reports: Go keeps a map value this large out of line, an
	// allocation for every account that reports.
	reports  []report
	reportAt map[int64]int
	_        [64]byte // neighbouring shards' locks on their own cache lines
}

// pendingRows are rows put since the last take.
type pendingRows struct {
	tickets []store.TicketRow
	// ticketAt indexes tickets by key: a later change of a ticket replaces its row, so a
	// batch holds one row per key (an order's open and close within one flush are one
	// row), as the store's statement needs.
	ticketAt map[[3]int64]int
	prot     map[[2]int64]store.ProtectionRow // by follower and scope
}

func (r *pendingRows) empty() bool {
	return len(r.tickets) == 0 && len(r.prot) == 0
}

func (r *pendingRows) clear() {
	clear(r.tickets) // no strings kept alive by the room
	r.tickets = r.tickets[:0]
	clear(r.ticketAt)
	clear(r.prot)
}

// report is what an account reports of itself: its status row and, when it has read
// its positions (hasSnap), its positions snapshot. due is when the StatusWriter may write
// it (engine.elapsed): a report that changes only figures (balance, equity, last copy, the
// positions) within StatusEvery of the account's last one waits until then, replaced by
// the account's later reports, so a busy account writes its lease row and snapshot once
// per StatusEvery instead of once per flush; a change of phase or error is due at once.
type report struct {
	status  store.AccountStatus
	snap    snapshotUpdate
	hasSnap bool
	due     time.Duration
}

// accountRows is what one step of account id under epoch leaves to write: its ticket-map
// changes and protection states, and its report (when hasReport).
type accountRows struct {
	id, epoch  int64
	tickets    []follower.TicketChange
	protection []follower.ProtectionState
	report     report
	hasReport  bool
}

// put queues one step's rows; it keeps neither a nor its slices of changes.
func (q *writeQueue) put(a *accountRows) {
	s := &q.shards[uint64(a.id)%writeShards]
	s.mu.Lock()
	defer s.mu.Unlock()
	r := &s.rows
	if len(a.tickets) > 0 && r.ticketAt == nil {
		r.ticketAt = map[[3]int64]int{}
	}
	for _, t := range a.tickets {
		e := t.Entry
		row := store.TicketRow{FollowerID: a.id, Epoch: a.epoch, LinkID: e.LinkID, MasterTicket: e.MasterTicket,
			FollowerTicket: e.FollowerTicket, Volume: e.Volume, ClosedAt: t.ClosedAt}
		k := [3]int64{a.id, e.LinkID, e.MasterTicket}
		if i, ok := r.ticketAt[k]; ok {
			r.tickets[i] = row
			continue
		}
		r.ticketAt[k] = len(r.tickets)
		r.tickets = append(r.tickets, row)
	}
	if len(a.protection) > 0 && r.prot == nil {
		r.prot = map[[2]int64]store.ProtectionRow{}
	}
	for _, p := range a.protection {
		r.prot[[2]int64{a.id, p.Scope}] = store.ProtectionRow{FollowerID: a.id, LinkID: p.Scope, Epoch: a.epoch, State: p.State, ResetGen: p.ResetGen}
	}
	if a.hasReport {
		s.putReport(a.id, &a.report)
	}
}

// putReport keeps rep as account id's latest report, its positions copied (rep's are the
// reporting account's, which it goes on changing): a report without a snapshot keeps
// the snapshot of the one it replaces, and the earlier of the two due times holds (a
// change due at once is not put off by the figures that follow it).
func (s *writeShard) putReport(id int64, rep *report) {
	if s.reportAt == nil {
		s.reportAt = map[int64]int{}
	}
	i, ok := s.reportAt[id]
	if !ok {
		s.reportAt[id] = len(s.reports)
		s.reports = append(s.reports, *rep)
		s.reports[len(s.reports)-1].snap.positions = slices.Clone(rep.snap.positions)
		return
	}
	old := &s.reports[i]
	due := min(old.due, rep.due)
	if rep.hasSnap {
		// Copied into the room of the report it replaces: a busy account's positions are
		// reported on every order and written once per StatusEvery.
		old.snap.row, old.hasSnap = rep.snap.row, true
		old.snap.positions = append(old.snap.positions[:0], rep.snap.positions...)
	}
	old.status, old.due = rep.status, due
}

// putBack queues the reports of a failed write again, due at once: each unless its
// account queued a newer one since, which then stands, due at once too, and keeps the
// failed one's snapshot when it has none. Dropped instead, an account that goes quiet
// after a failed write would keep its stale status and positions in the database.
func (q *writeQueue) putBack(reports []report) {
	for i := range reports {
		r := reports[i]
		id := r.status.ID
		s := &q.shards[uint64(id)%writeShards]
		r.due = 0
		s.mu.Lock()
		if j, ok := s.reportAt[id]; ok {
			// The failed report goes in as the older one and the newer is put on it again:
			// putReport's rule (its status, the failed snapshot when it has none, due at once).
			newer := s.reports[j]
			s.reports[j] = r
			s.putReport(id, &newer)
		} else {
			s.putReport(id, &r)
		}
		s.mu.Unlock()
	}
}

// take swaps out the rows of every shard that has some and hands them to drain in one
// call (so that it can size its batch once), then empties them for reuse: drain must not
// keep their containers. It appends to reports, and returns, the reports due at now
// (every report when all: a requested flush writes everything queued before it). One
// caller at a time (the StatusWriter).
func (q *writeQueue) take(now time.Duration, all bool, reports []report, drain func(taken []*pendingRows)) []report {
	var taken [writeShards]*pendingRows
	n := 0
	for i := range q.shards {
		s := &q.shards[i]
		s.mu.Lock()
		if !s.rows.empty() {
			s.rows, s.spare = s.spare, s.rows
			taken[n] = &s.spare
			n++
		}
		reports = s.takeReports(now, all, reports)
		s.mu.Unlock()
	}
	if n == 0 {
		return reports
	}
	drain(taken[:n])
	for _, r := range taken[:n] {
		r.clear()
	}
	return reports
}

// takeReports appends the shard's reports due at now (all of them when all) to out and
// keeps the others, in their order.
func (s *writeShard) takeReports(now time.Duration, all bool, out []report) []report {
	if len(s.reports) == 0 {
		return out
	}
	kept := s.reports[:0]
	for _, r := range s.reports {
		if all || r.due <= now {
			out = append(out, r)
		} else {
			kept = append(kept, r)
		}
	}
	if len(kept) == len(s.reports) {
		return out
	}
	clear(s.reports[len(kept):]) // no strings or positions kept alive by the room
	s.reports = kept
	clear(s.reportAt)
	for i := range kept {
		s.reportAt[kept[i].status.ID] = i
	}
	return out
}
