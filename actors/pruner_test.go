package actors_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/snapcopier/copier/actors"
)

// TestNodePrunesTicketHistory: a node deletes the ticket map's closed rows older than its
// TicketHistory on its own, reports the turn (SignalPruned, the metric) and keeps open
// rows and younger history; with KeepTicketHistory it deletes nothing.
func TestNodePrunesTicketHistory(t *testing.T) {
	c := newCluster(t, 1, 1)
	ctx := context.Background()
	var link int64
	must(t, c.db.Pool.QueryRow(ctx, `SELECT id FROM copy_links WHERE follower_id = $1`, c.followers[0]).Scan(&link))
	// Rows a node wrote long ago: one closed three hours ago, one ten minutes ago, one open.
	_, err := c.db.Pool.Exec(ctx, `
		INSERT INTO copy_positions (follower_id, link_id, master_ticket, follower_ticket, volume, lease_epoch, closed_at)
		VALUES ($1, $2, 1, 101, 1, 1, now() - interval '3 hours'), ($1, $2, 2, 102, 1, 1, now() - interval '10 minutes'),
		       ($1, $2, 3, 103, 1, 1, NULL)`, c.followers[0], link)
	must(t, err)
	left := func() string {
		var got []int64
		rows, err := c.db.Pool.Query(ctx, `SELECT master_ticket FROM copy_positions ORDER BY 1`)
		must(t, err)
		defer rows.Close()
		for rows.Next() {
			var m int64
			must(t, rows.Scan(&m))
			got = append(got, m)
		}
		return fmt.Sprint(got)
	}

	// A node that keeps its history: several lease cycles and no prune.
	mark := c.signals.Len()
	keeper := c.startWith("keeper", 0, nil, func(cfg *actors.Config) {
		cfg.TicketHistory, cfg.PruneEvery = actors.KeepTicketHistory, time.Millisecond
	})
	c.awaitSignals("five lease cycles of the node that keeps its history", mark, func(sigs []actors.Signal) (bool, string) {
		n := 0
		for _, s := range sigs {
			if s.Kind == actors.SignalPruned {
				t.Fatalf("a node with KeepTicketHistory pruned: %+v", s)
			}
			if s.Kind == actors.SignalCycle && s.Node == "keeper" {
				n++
			}
		}
		return n >= 5, fmt.Sprintf("%d cycles", n)
	})
	must(t, keeper.Stop(ctx))
	if got := left(); got != "[1 2 3]" {
		t.Fatalf("rows after the node that keeps its history: %s, want [1 2 3]", got)
	}

	// A node with an hour of history (capacity 0: it copies nothing, the prune is the
	// cluster's, not its accounts').
	mark = c.signals.Len()
	n := c.startWith("pruner", 0, nil, func(cfg *actors.Config) {
		cfg.TicketHistory, cfg.PruneEvery = time.Hour, 20*time.Millisecond
	})
	c.awaitSignals("a prune that deleted the old row", mark, func(sigs []actors.Signal) (bool, string) {
		for _, s := range sigs {
			if s.Kind == actors.SignalPruned && s.Err != nil {
				t.Fatalf("prune failed: %v", s.Err)
			}
			if s.Kind == actors.SignalPruned && s.Pruned > 0 {
				if s.Pruned != 1 || s.Node != "pruner" {
					t.Fatalf("prune signal %+v, want one row deleted by node pruner", s)
				}
				return true, ""
			}
		}
		return false, "no prune has deleted a row"
	})
	if got := left(); got != "[2 3]" {
		t.Fatalf("rows after the prune: %s, want [2 3] (the open row and the one closed ten minutes ago kept)", got)
	}
	if got := n.Metrics().TicketRowsPruned.Load(); got != 1 {
		t.Fatalf("TicketRowsPruned = %d, want 1", got)
	}
}
