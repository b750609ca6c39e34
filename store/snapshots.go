package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/snapcopier/copier/internal/pgparams"
)

// PositionsSnapshot is what a follower's owner last saw of its positions.
type PositionsSnapshot struct {
	ID        int64
	Epoch     int64  // the writer's lease epoch: the row is written only if it still matches
	Node      string // the writer (read back only)
	Positions []byte // a JSON array, as the engine encodes it
	SeenAt    time.Time
}

// WriteSnapshotsFenced writes a batch of positions snapshots (a statement per writeBatch), through the
// same fence as statuses: a row lands only where node_id is this node and lease_epoch is
// the row's epoch (the owner rows are share-locked in id order, like the ticket map's).
func WriteSnapshotsFenced(ctx context.Context, pool *pgxpool.Pool, node string, rows []PositionsSnapshot) (FencedResult, error) {
	return inBatches(rows, writeBatch, func(batch []PositionsSnapshot) (FencedResult, error) {
		return writeSnapshotsFenced(ctx, pool, node, batch)
	})
}

// emptyPositions is the snapshot of no positions.
var emptyPositions = []byte("[]")

func writeSnapshotsFenced(ctx context.Context, pool *pgxpool.Pool, node string, rows []PositionsSnapshot) (FencedResult, error) {
	rows = lastPerKey(rows, func(r PositionsSnapshot) int64 { return r.ID }, cmp.Compare[int64])
	if len(rows) == 0 {
		return FencedResult{}, nil
	}
	n := len(rows)
	applied, err := execEncoded(ctx, pool, `
		WITH s AS (
			SELECT * FROM unnest($2::bigint[], $3::bigint[], $4::text[], $5::timestamptz[]) AS s(id, epoch, positions, seen_at)),
		owned AS (
			SELECT t.id, t.lease_epoch FROM trading_accounts t
			WHERE t.id = ANY($2::bigint[]) AND t.node_id = $1
			ORDER BY t.id
			FOR KEY SHARE OF t) -- see fenceLock
		INSERT INTO account_positions AS p (account_id, node_id, lease_epoch, positions, seen_at)
		SELECT s.id, $1, s.epoch, s.positions::jsonb, s.seen_at
		FROM s JOIN owned o ON o.id = s.id AND o.lease_epoch = s.epoch
		ON CONFLICT (account_id) DO UPDATE
		SET node_id = excluded.node_id, lease_epoch = excluded.lease_epoch, positions = excluded.positions,
		    seen_at = excluded.seen_at, updated_at = now()`,
		func(p *pgparams.Params) {
			p.Text(node)
			p.Int8Array(n, func(i int) int64 { return rows[i].ID })
			p.Int8Array(n, func(i int) int64 { return rows[i].Epoch })
			p.TextArrayBytes(n, func(i int) []byte {
				if len(rows[i].Positions) == 0 {
					return emptyPositions
				}
				return rows[i].Positions
			})
			p.TimestamptzArray(n, func(i int) (time.Time, bool) { return rows[i].SeenAt, true })
		})
	if err != nil {
		return FencedResult{}, fmt.Errorf("store: write positions snapshots: %w", err)
	}
	return FencedResult{Applied: applied, Refused: int64(n) - applied}, nil
}

// ReadPositionsSnapshot returns an account's last positions snapshot; ok is false when no
// owner has written one.
func ReadPositionsSnapshot(ctx context.Context, pool *pgxpool.Pool, id int64) (s PositionsSnapshot, ok bool, err error) {
	err = pool.QueryRow(ctx, `SELECT account_id, lease_epoch, node_id, positions::text, seen_at FROM account_positions WHERE account_id = $1`, id).
		Scan(&s.ID, &s.Epoch, &s.Node, &s.Positions, &s.SeenAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return PositionsSnapshot{}, false, nil
	}
	if err != nil {
		return PositionsSnapshot{}, false, fmt.Errorf("store: read positions snapshot %d: %w", id, err)
	}
	return s, true, nil
}
