package store_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/snapcopier/copier/store"
)

// TestPruneClosedTickets: a prune deletes closed ticket-map rows older than the history
// it is given, oldest first and at most limit a call; open rows and younger closed rows
// stay, and a row another transaction holds is skipped, not waited for.
func TestPruneClosedTickets(t *testing.T) {
	t.Parallel()
	db, link, ep := ownedFollowerWithLink(t)
	now := time.Now()
	row := func(master int64, closedAgo time.Duration) store.TicketRow {
		r := store.TicketRow{FollowerID: 1, Epoch: ep, LinkID: link, MasterTicket: master, FollowerTicket: 100 + master, Volume: 1}
		if closedAgo > 0 {
			r.ClosedAt = now.Add(-closedAgo)
		}
		return r
	}
	rows := []store.TicketRow{row(1, 0), row(2, 5*time.Hour), row(3, 4*time.Hour), row(4, 3*time.Hour), row(5, 30*time.Minute), row(6, 0)}
	if res, err := store.UpsertTicketsFenced(ctxT(t), db.Pool, "a", rows); err != nil || res.Applied != int64(len(rows)) {
		t.Fatalf("upsert: %+v, %v", res, err)
	}
	left := func() []int64 {
		t.Helper()
		var out []int64
		rs, err := db.Pool.Query(ctxT(t), `SELECT master_ticket FROM copy_positions ORDER BY master_ticket`)
		if err != nil {
			t.Fatal(err)
		}
		defer rs.Close()
		for rs.Next() {
			var m int64
			if err := rs.Scan(&m); err != nil {
				t.Fatal(err)
			}
			out = append(out, m)
		}
		return out
	}
	prune := func(limit int) int64 {
		t.Helper()
		n, err := store.PruneClosedTickets(ctxT(t), db.Pool, time.Hour, limit)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}

	// The oldest two first.
	if n := prune(2); n != 2 {
		t.Fatalf("first prune deleted %d rows, want 2", n)
	}
	if got := left(); !slices.Equal(got, []int64{1, 4, 5, 6}) {
		t.Fatalf("after the first prune: %v, want [1 4 5 6] (the two oldest closed rows gone)", got)
	}

	// A row held by another transaction (an owner writing the same key) is skipped at once.
	tx, err := db.Pool.Begin(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(ctxT(t), `SELECT 1 FROM copy_positions WHERE master_ticket = 4 FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	if n := prune(10); n != 0 {
		t.Fatalf("prune while the last old row is locked deleted %d rows, want 0", n)
	}
	if err := tx.Rollback(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if n := prune(10); n != 1 {
		t.Fatalf("prune after the lock deleted %d rows, want 1", n)
	}
	if n := prune(10); n != 0 {
		t.Fatalf("a prune with nothing old left deleted %d rows", n)
	}
	if got := left(); !slices.Equal(got, []int64{1, 5, 6}) {
		t.Fatalf("after pruning: %v, want [1 5 6] (open rows and the row closed 30 min ago kept)", got)
	}

	// A pruned key can be written again: the owner re-opens a copy of master ticket 2.
	if res, err := store.UpsertTicketsFenced(ctxT(t), db.Pool, "a", []store.TicketRow{row(2, 0)}); err != nil || res.Applied != 1 {
		t.Fatalf("re-open after a prune: %+v, %v", res, err)
	}
	open, err := store.OpenTickets(ctxT(t), db.Pool, 1)
	if err != nil || len(open) != 3 {
		t.Fatalf("open tickets after pruning: %+v, %v; want masters 1, 2 and 6", open, err)
	}

	for _, bad := range []struct {
		age   time.Duration
		limit int
	}{{0, 10}, {-time.Hour, 10}, {time.Hour, 0}} {
		if _, err := store.PruneClosedTickets(ctxT(t), db.Pool, bad.age, bad.limit); err == nil {
			t.Fatalf("prune with age %v and limit %d: no error", bad.age, bad.limit)
		}
	}
}
