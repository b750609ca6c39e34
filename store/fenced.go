package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// AccountStatus is one follower's reported state, written by its owner.
type AccountStatus struct {
	ID         int64
	Epoch      int64 // the writer's lease epoch: the row is written only if it still matches
	Status     string
	LastError  string
	Balance    float64
	Equity     float64
	At         time.Time
	LastCopyAt time.Time // zero: unchanged
}

// FencedResult counts what a fenced batch did: rows written, and rows refused because the
// writer no longer owns the account at that epoch (stale writes that were stopped).
type FencedResult struct {
	Applied int64
	Refused int64
}

// fenceLock: the fenced writes to other tables (tickets, positions snapshots, protection
// states) check the owner and epoch on the account's row under FOR KEY SHARE. That lock
// blocks a claim (FOR UPDATE, the only change of lease_epoch or of the owner to another
// node) until the write commits, so a write checked against its owner's epoch always lands
// before a new owner's claim; it does not wait for, nor hold up, the owner's own lease
// renewals and releases (FOR NO KEY UPDATE), as FOR SHARE did — at 20,000 followers on a
// 1 s interval, lease cycles waiting behind those writes missed their deadline.

// statusChunk bounds one status statement: the rows it updates are the lease rows the
// cycle renews, so a smaller statement holds their locks for less time.
const statusChunk = 500

// WriteStatusesFenced writes a batch of statuses, statusChunk rows per statement. Each row
// is written only where node_id is this node and lease_epoch is the row's epoch: a node
// that lost an account cannot overwrite what the new owner wrote, even from a queue.
func WriteStatusesFenced(ctx context.Context, pool *pgxpool.Pool, node string, rows []AccountStatus) (FencedResult, error) {
	rows = lastPerKey(rows, func(r AccountStatus) int64 { return r.ID })
	var total FencedResult
	for len(rows) > 0 {
		n := min(len(rows), statusChunk)
		res, err := writeStatuses(ctx, pool, node, rows[:n])
		total.Applied, total.Refused = total.Applied+res.Applied, total.Refused+res.Refused
		if err != nil {
			return total, err
		}
		rows = rows[n:]
	}
	return total, nil
}

func writeStatuses(ctx context.Context, pool *pgxpool.Pool, node string, rows []AccountStatus) (FencedResult, error) {
	n := len(rows)
	ids, epochs := make([]int64, n), make([]int64, n)
	statuses, errs := make([]string, n), make([]string, n)
	balances, equities := make([]float64, n), make([]float64, n)
	ats, copies := make([]time.Time, n), make([]*time.Time, n)
	for i, r := range rows {
		ids[i], epochs[i], statuses[i], errs[i] = r.ID, r.Epoch, r.Status, r.LastError
		balances[i], equities[i], ats[i] = r.Balance, r.Equity, r.At
		if !r.LastCopyAt.IsZero() {
			t := r.LastCopyAt
			copies[i] = &t
		}
	}
	tag, err := pool.Exec(ctx, `
		WITH s AS (
			SELECT * FROM unnest($2::bigint[], $3::bigint[], $4::text[], $5::text[], $6::float8[], $7::float8[], $8::timestamptz[], $9::timestamptz[])
			     AS s(id, epoch, status, last_error, balance, equity, at, last_copy_at)),
		locked AS (
			SELECT t.id FROM trading_accounts t JOIN s ON t.id = s.id AND t.lease_epoch = s.epoch
			WHERE t.node_id = $1
			ORDER BY t.id
			FOR NO KEY UPDATE OF t)
		UPDATE trading_accounts t
		SET status = s.status, last_error = s.last_error, balance = s.balance, equity = s.equity,
		    status_at = s.at, last_copy_at = coalesce(s.last_copy_at, t.last_copy_at)
		FROM s JOIN locked ON locked.id = s.id
		WHERE t.id = s.id AND t.node_id = $1 AND t.lease_epoch = s.epoch`,
		node, ids, epochs, statuses, errs, balances, equities, ats, copies)
	if err != nil {
		return FencedResult{}, fmt.Errorf("store: write statuses: %w", err)
	}
	return FencedResult{Applied: tag.RowsAffected(), Refused: int64(n) - tag.RowsAffected()}, nil
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

// UpsertTicketsFenced inserts or updates ticket-map rows in one statement, each only where
// its follower is still owned by node at the row's epoch. The follower rows are share-locked
// (in id order) so a concurrent claim either commits first (and the row is refused) or
// waits.
func UpsertTicketsFenced(ctx context.Context, pool *pgxpool.Pool, node string, rows []TicketRow) (FencedResult, error) {
	// One statement may not upsert one key twice: the last write of a key wins.
	rows = lastPerKey(rows, func(r TicketRow) [3]int64 {
		return [3]int64{r.FollowerID, r.LinkID, r.MasterTicket}
	})
	if len(rows) == 0 {
		return FencedResult{}, nil
	}
	n := len(rows)
	fids, epochs, links := make([]int64, n), make([]int64, n), make([]int64, n)
	mts, fts := make([]int64, n), make([]int64, n)
	vols, closed := make([]float64, n), make([]*time.Time, n)
	for i, r := range rows {
		fids[i], epochs[i], links[i], mts[i], fts[i], vols[i] = r.FollowerID, r.Epoch, r.LinkID, r.MasterTicket, r.FollowerTicket, r.Volume
		if !r.ClosedAt.IsZero() {
			t := r.ClosedAt
			closed[i] = &t
		}
	}
	tag, err := pool.Exec(ctx, `
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
		node, fids, epochs, links, mts, fts, vols, closed)
	if err != nil {
		return FencedResult{}, fmt.Errorf("store: upsert tickets: %w", err)
	}
	return FencedResult{Applied: tag.RowsAffected(), Refused: int64(n) - tag.RowsAffected()}, nil
}

// lastPerKey keeps the last row of each key, in first-seen key order.
func lastPerKey[T any, K comparable](rows []T, key func(T) K) []T {
	idx := make(map[K]int, len(rows))
	out := make([]T, 0, len(rows))
	for _, r := range rows {
		k := key(r)
		if i, ok := idx[k]; ok {
			out[i] = r
			continue
		}
		idx[k] = len(out)
		out = append(out, r)
	}
	return out
}
