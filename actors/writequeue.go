package actors

import (
	"sync"

	"github.com/snapcopier/copier/reconcile/follower"
	"github.com/snapcopier/copier/store"
)

// writeQueue holds the rows the AccountActors leave for the StatusWriter until its next
// flush: the latest ticket-map row per ticket, in the order the tickets first changed, and
// the latest protection state per scope, status and positions snapshot per account. A step puts its rows under one
// shard's lock; sent as a message instead, they were boxed and woke the writer's mailbox
// for every order, though the writer needs them only when it flushes. An account's rows
// always go to the same shard, so they are taken in the order the account put them.
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
	_     [64]byte // neighbouring shards' locks on their own cache lines
}

// pendingRows are rows put since the last take.
type pendingRows struct {
	tickets []store.TicketRow
	// ticketAt indexes tickets by key: a later change of a ticket replaces its row, so a
	// batch holds one row per key (an order's open and close within one flush are one
	// row), as the store's statement needs.
	ticketAt map[[3]int64]int
	prot     map[[2]int64]store.ProtectionRow // by follower and scope
	statuses map[int64]store.AccountStatus
	snaps    map[int64]snapshotUpdate
}

func (r *pendingRows) empty() bool {
	return len(r.tickets) == 0 && len(r.prot) == 0 && len(r.statuses) == 0 && len(r.snaps) == 0
}

func (r *pendingRows) clear() {
	clear(r.tickets) // no strings kept alive by the room
	r.tickets = r.tickets[:0]
	clear(r.ticketAt)
	clear(r.prot)
	clear(r.statuses)
	clear(r.snaps)
}

// accountRows is what one step of account id under epoch leaves to write: its ticket-map
// changes and protection states, its status (when hasStatus) and its positions snapshot
// (when hasSnap).
type accountRows struct {
	id, epoch  int64
	tickets    []follower.TicketChange
	protection []follower.ProtectionState
	status     store.AccountStatus
	snap       snapshotUpdate
	hasStatus  bool
	hasSnap    bool
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
	if a.hasStatus {
		if r.statuses == nil {
			r.statuses = map[int64]store.AccountStatus{}
		}
		r.statuses[a.id] = a.status
	}
	if a.hasSnap {
		if r.snaps == nil {
			r.snaps = map[int64]snapshotUpdate{}
		}
		r.snaps[a.id] = a.snap
	}
}

// take swaps out the rows of every shard that has some and hands them to drain in one
// call (so that it can size its batch once), then empties them for reuse: drain must not
// keep their containers. One caller at a time (the StatusWriter).
func (q *writeQueue) take(drain func(taken []*pendingRows)) {
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
		s.mu.Unlock()
	}
	if n == 0 {
		return
	}
	drain(taken[:n])
	for _, r := range taken[:n] {
		r.clear()
	}
}
