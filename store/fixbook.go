package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// FIXPosition is one position of a FIX account's book (broker/fix.Book): the broker's
// record of what its own fills opened at a venue it cannot ask.
type FIXPosition struct {
	Ticket   int64
	Position []byte // JSON, as broker/fix encodes it
}

// ReadFIXPositions returns the book of the account platform/login (any server: the book
// is the owner's, and a node claims one platform), in ticket order.
func ReadFIXPositions(ctx context.Context, pool *pgxpool.Pool, platform, login string) ([]FIXPosition, error) {
	rows, err := pool.Query(ctx, `
		SELECT p.ticket, p.position::text FROM fix_positions p JOIN trading_accounts t ON t.id = p.account_id
		WHERE t.platform = $1 AND t.login = $2 ORDER BY p.ticket`, platform, login)
	if err != nil {
		return nil, fmt.Errorf("store: read FIX positions of %s: %w", login, err)
	}
	defer rows.Close()
	out := []FIXPosition{}
	for rows.Next() {
		var p FIXPosition
		var doc string
		if err := rows.Scan(&p.Ticket, &doc); err != nil {
			return nil, fmt.Errorf("store: read FIX positions of %s: %w", login, err)
		}
		p.Position = []byte(doc)
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: read FIX positions of %s: %w", login, err)
	}
	return out, nil
}

// PutFIXPositionFenced writes (or, with a nil Position, removes) one position of the
// account platform/login's book through the owner fence: only where node owns the account
// at epoch (see fenceLock). ok is false when the fence refused it: the account has another
// owner, or a later epoch, and the write would overwrite that owner's book.
//
// Every fill writes one, so the account is found by its (platform, login) index alone: the
// owner is compared with IS NOT DISTINCT FROM (the same test for a node id, which is never
// NULL), which no index serves. With node_id = $1 and the statistics of a moment before the
// node's claim (or of a node id they do not know), PostgreSQL took the node for one row and
// drove the lookup from trading_accounts_node_idx: every owned row, per fill
// (TestFencedWritesStayLinearWhateverTheStatistics).
//
// Unlike the store's other statements it is prepared by name, so that PostgreSQL keeps a
// generic plan after five executions instead of parsing and planning every fill: a lookup
// by (platform, login), which one index serves whatever the parameters (the plan test
// checks the generic plan too). Backend CPU per write at 5,000 owned: 100 µs, against 190
// planned every time and 230 parsed and planned every time (BENCHMARKS.md).
func PutFIXPositionFenced(ctx context.Context, pool *pgxpool.Pool, node string, epoch int64, platform, login string, p FIXPosition) (ok bool, err error) {
	var n int64
	if p.Position == nil {
		err = pool.QueryRow(ctx, `
			WITH owned AS (
				SELECT t.id FROM trading_accounts t
				WHERE t.platform = $2 AND t.login = $3 AND t.node_id IS NOT DISTINCT FROM $1 AND t.lease_epoch = $4
				ORDER BY t.id
				FOR KEY SHARE OF t), -- see fenceLock
			del AS (
				DELETE FROM fix_positions p USING owned o WHERE p.account_id = o.id AND p.ticket = $5)
			SELECT count(*) FROM owned`, pgx.QueryExecModeCacheStatement, node, platform, login, epoch, p.Ticket).Scan(&n)
	} else {
		err = pool.QueryRow(ctx, `
			WITH owned AS (
				SELECT t.id FROM trading_accounts t
				WHERE t.platform = $2 AND t.login = $3 AND t.node_id IS NOT DISTINCT FROM $1 AND t.lease_epoch = $4
				ORDER BY t.id
				FOR KEY SHARE OF t), -- see fenceLock
			ins AS (
				INSERT INTO fix_positions AS p (account_id, ticket, node_id, lease_epoch, position)
				SELECT o.id, $5, $1, $4, $6::jsonb FROM owned o
				ON CONFLICT (account_id, ticket) DO UPDATE
				SET node_id = excluded.node_id, lease_epoch = excluded.lease_epoch,
				    position = excluded.position, updated_at = now())
			SELECT count(*) FROM owned`, pgx.QueryExecModeCacheStatement, node, platform, login, epoch, p.Ticket, string(p.Position)).Scan(&n)
	}
	if err != nil {
		return false, fmt.Errorf("store: write FIX position %d of %s: %w", p.Ticket, login, err)
	}
	return n > 0, nil
}
