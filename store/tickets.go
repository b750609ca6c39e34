package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/snapcopier/copier/internal/pgparams"
)

// Queries of copy_positions: the ticket map, which follower position copies which master
// position, written by the follower's owner under its fence.

// OpenTickets returns the open ticket-map rows of a follower (ClosedAt zero; Epoch is the
// writer's epoch).
func OpenTickets(ctx context.Context, pool *pgxpool.Pool, followerID int64) ([]TicketRow, error) {
	rows, err := pool.Query(ctx, `SELECT follower_id, lease_epoch, link_id, master_ticket, follower_ticket, volume
		FROM copy_positions WHERE follower_id = $1 AND closed_at IS NULL ORDER BY link_id, master_ticket`, followerID)
	if err != nil {
		return nil, fmt.Errorf("store: open tickets: %w", err)
	}
	out, err := pgx.CollectRows(rows, scanTicketRow)
	if err != nil {
		return nil, fmt.Errorf("store: open tickets: %w", err)
	}
	return out, nil
}

// scanTicketRow scans follower_id, lease_epoch, link_id, master_ticket, follower_ticket,
// volume.
func scanTicketRow(row pgx.CollectableRow) (TicketRow, error) {
	var t TicketRow
	err := row.Scan(&t.FollowerID, &t.Epoch, &t.LinkID, &t.MasterTicket, &t.FollowerTicket, &t.Volume)
	return t, err
}

// TicketRow is one ticket-map row: a follower position that copies a master position.
type TicketRow struct {
	FollowerID     int64
	Epoch          int64 // the writer's lease epoch on FollowerID
	LinkID         int64
	MasterTicket   int64
	FollowerTicket int64
	Volume         float64   // copy ratio: follower lots per master lot
	ClosedAt       time.Time // zero: open
}

// UpsertTicketsFenced inserts or updates ticket-map rows (a statement per writeBatch), each only where
// its follower is still owned by node at the row's epoch. The follower rows are share-locked
// (in id order) so a concurrent claim either commits first (and the row is refused) or
// waits.
func UpsertTicketsFenced(ctx context.Context, pool *pgxpool.Pool, node string, rows []TicketRow) (FencedResult, error) {
	return inBatches(rows, writeBatch, func(batch []TicketRow) (FencedResult, error) { return upsertTicketsFenced(ctx, pool, node, batch) })
}

func upsertTicketsFenced(ctx context.Context, pool *pgxpool.Pool, node string, rows []TicketRow) (FencedResult, error) {
	// One statement may not upsert one key twice: the last write of a key wins.
	rows = lastPerKey(rows, func(r TicketRow) [3]int64 {
		return [3]int64{r.FollowerID, r.LinkID, r.MasterTicket}
	}, compareKey3)
	if len(rows) == 0 {
		return FencedResult{}, nil
	}
	n := len(rows)
	applied, err := execEncoded(ctx, pool, `
		WITH s AS (
			SELECT * FROM unnest($2::bigint[], $3::bigint[], $4::bigint[], $5::bigint[], $6::bigint[], $7::float8[], $8::timestamptz[])
			     AS s(follower_id, epoch, link_id, master_ticket, follower_ticket, volume, closed_at)),
		owned AS (
			SELECT t.id, t.lease_epoch FROM trading_accounts t
			WHERE t.id = ANY($2::bigint[]) AND t.node_id = $1
			ORDER BY t.id
			FOR KEY SHARE OF t) -- see fenceLock
		INSERT INTO copy_positions AS c (follower_id, link_id, master_ticket, follower_ticket, volume, closed_at, lease_epoch)
		SELECT s.follower_id, s.link_id, s.master_ticket, s.follower_ticket, s.volume, s.closed_at, s.epoch
		FROM s
		JOIN owned o ON o.id = s.follower_id AND o.lease_epoch = s.epoch
		JOIN copy_links l ON l.id = s.link_id AND l.follower_id = s.follower_id
		ON CONFLICT (follower_id, link_id, master_ticket) DO UPDATE
		SET follower_ticket = excluded.follower_ticket, volume = excluded.volume, closed_at = excluded.closed_at, lease_epoch = excluded.lease_epoch, updated_at = now()`,
		func(p *pgparams.Params) {
			p.Text(node)
			p.Int8Array(n, func(i int) int64 { return rows[i].FollowerID })
			p.Int8Array(n, func(i int) int64 { return rows[i].Epoch })
			p.Int8Array(n, func(i int) int64 { return rows[i].LinkID })
			p.Int8Array(n, func(i int) int64 { return rows[i].MasterTicket })
			p.Int8Array(n, func(i int) int64 { return rows[i].FollowerTicket })
			p.Float8Array(n, func(i int) (float64, bool) { return rows[i].Volume, true })
			p.TimestamptzArray(n, func(i int) (time.Time, bool) { return rows[i].ClosedAt, !rows[i].ClosedAt.IsZero() })
		})
	if err != nil {
		return FencedResult{}, fmt.Errorf("store: upsert tickets: %w", err)
	}
	return FencedResult{Applied: applied, Refused: int64(n) - applied}, nil
}

// PruneClosedTickets deletes up to limit ticket-map rows that closed more than olderThan
// ago by the database's clock, oldest first, and returns how many it deleted. Nothing that
// copies reads a closed row (a follower loads its open rows only), so no fence is needed:
// the rows are locked with SKIP LOCKED, so an owner's write of the same key (a re-opened
// copy) never waits on a prune and two nodes pruning at once take different rows.
func PruneClosedTickets(ctx context.Context, pool *pgxpool.Pool, olderThan time.Duration, limit int) (int64, error) {
	if olderThan <= 0 || limit <= 0 {
		return 0, fmt.Errorf("store: prune tickets: age %v and limit %d must be > 0", olderThan, limit)
	}
	tag, err := pool.Exec(ctx, `
		DELETE FROM copy_positions
		WHERE ctid = ANY(ARRAY(
			SELECT ctid FROM copy_positions
			WHERE closed_at IS NOT NULL AND closed_at < now() - make_interval(secs => $1)
			ORDER BY closed_at
			LIMIT $2
			FOR UPDATE SKIP LOCKED))
		  AND closed_at IS NOT NULL`, olderThan.Seconds(), limit)
	if err != nil {
		return 0, fmt.Errorf("store: prune tickets: %w", err)
	}
	return tag.RowsAffected(), nil
}
