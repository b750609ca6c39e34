package actors

import (
	"testing"

	"github.com/snapcopier/copier/reconcile"
	"github.com/snapcopier/copier/reconcile/follower"
	"github.com/snapcopier/copier/store"
)

// TestWriteQueueKeepsEachAccountsLatest: between two takes the queue holds, per account,
// the latest status and the latest positions snapshot, each from the last step that had
// one (a later step without a snapshot leaves the earlier one to be written), and one
// ticket row per (account, link, master ticket), the latest, in the order first changed.
func TestWriteQueueKeepsEachAccountsLatest(t *testing.T) {
	var q writeQueue
	status := func(id int64, phase string) store.AccountStatus { return store.AccountStatus{ID: id, Status: phase} }
	snap := func(id, epoch int64) snapshotUpdate {
		return snapshotUpdate{row: store.PositionsSnapshot{ID: id, Epoch: epoch}}
	}
	ticket := func(master, followerTicket int64) follower.TicketChange {
		return follower.TicketChange{Entry: reconcile.TicketMapEntry{LinkID: 1, MasterTicket: master, FollowerTicket: followerTicket}}
	}
	q.put(&accountRows{id: 1, epoch: 3, status: status(1, "a"), hasStatus: true, snap: snap(1, 3), hasSnap: true,
		tickets: []follower.TicketChange{ticket(7, 70), ticket(8, 80)}})
	q.put(&accountRows{id: 1, epoch: 3, status: status(1, "b"), hasStatus: true, tickets: []follower.TicketChange{ticket(7, 71)}})
	q.put(&accountRows{id: 2, epoch: 5, snap: snap(2, 5), hasSnap: true})
	q.put(&accountRows{id: 2, epoch: 5, status: status(2, "c"), hasStatus: true})
	q.put(&accountRows{id: 3, epoch: 1}) // nothing to write

	statuses := map[int64]store.AccountStatus{}
	snaps := map[int64]snapshotUpdate{}
	var tickets []store.TicketRow
	q.take(func(taken []*pendingRows) {
		for _, r := range taken {
			for id, s := range r.statuses {
				statuses[id] = s
			}
			for id, s := range r.snaps {
				snaps[id] = s
			}
			tickets = append(tickets, r.tickets...)
		}
	})
	if len(statuses) != 2 || statuses[1].Status != "b" || statuses[2].Status != "c" {
		t.Errorf("statuses %+v, want account 1's b and account 2's c", statuses)
	}
	if len(snaps) != 2 || snaps[1].row.Epoch != 3 || snaps[2].row.Epoch != 5 {
		t.Errorf("snapshots %+v, want each account's earlier one", snaps)
	}
	if len(tickets) != 2 || tickets[0].MasterTicket != 7 || tickets[0].FollowerTicket != 71 || tickets[1].MasterTicket != 8 {
		t.Errorf("ticket rows %+v, want master 7 → 71, then master 8", tickets)
	}
	var again bool
	q.take(func([]*pendingRows) { again = true })
	if again {
		t.Error("a second take found rows: the first did not empty the queue")
	}
}
