package actors_test

import (
	"context"
	"testing"
	"time"

	"github.com/snapcopier/copier/actors"
	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/leasekeeper"
	"github.com/snapcopier/copier/store"
)

// TestFlushWritesTheQueuedRows: Node.Flush writes the ticket-map rows the accounts have
// queued, at once. The periodic flush and the renewal's flush are an hour away here, so
// nothing else writes them, and an account's signal comes after its step's rows are
// queued (an observer that saw the copy's reconcile end can flush its row).
func TestFlushWritesTheQueuedRows(t *testing.T) {
	c := newCluster(t, 1, 3)
	p := c.masterOpen(1, "EURUSD", broker.Buy, 0.1, 0, 0)
	n := c.startWith("n1", 10, nil, func(cfg *actors.Config) {
		cfg.FlushEvery = time.Hour
		cfg.Lease = leasekeeper.Config{Lease: 3 * time.Hour, Fence: time.Hour, Interval: time.Hour}
	})
	c.awaitIdle("the master's position copied", 0, c.followers)
	ctx := context.Background()
	openTickets := func(f int64) []store.TicketRow {
		rows, err := store.OpenTickets(ctx, c.db.Pool, f)
		must(t, err)
		return rows
	}
	for _, f := range c.followers {
		if rows := openTickets(f); len(rows) != 0 {
			t.Fatalf("follower %d: %d ticket rows written before any flush: %+v", f, len(rows), rows)
		}
	}
	must(t, n.Flush(ctx))
	for _, f := range c.followers {
		rows := openTickets(f)
		if len(rows) != 1 || rows[0].MasterTicket != p.Ticket || rows[0].FollowerTicket == 0 {
			t.Fatalf("follower %d: after Flush want the copy of master ticket %d, got %+v", f, p.Ticket, rows)
		}
	}
}
