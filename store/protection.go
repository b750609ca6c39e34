package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ProtectionRow is what one scope of a follower's protections remembers: LinkID 0 is the
// follower's own limits, any other a link's. State is a JSON document of package
// reconcile/protect (State); the store does not read it.
type ProtectionRow struct {
	FollowerID int64
	LinkID     int64
	Epoch      int64 // the writer's lease epoch: the row is written only if it still matches
	State      []byte
	// ResetGen is the operator-reset generation the state is based on: a write based on
	// an older generation than the row's is refused (a reset cannot be undone by a queued
	// write), and a reader that sees a newer one adopts the stored state.
	ResetGen  int64
	UpdatedAt time.Time // read back only
}

// Protection is what the owner loads of a follower's protections.
type Protection struct {
	// Limits is the follower's own limits (JSON of reconcile/protect.Limits), nil when none
	// are set.
	Limits []byte
	// States holds the stored state of every scope, by link id (0: the follower's own).
	States map[int64]ProtectionRow
}

// LoadProtection reads a follower's own limits and the stored state of each scope.
func LoadProtection(ctx context.Context, pool *pgxpool.Pool, followerID int64) (Protection, error) {
	var p Protection
	err := pgx.BeginTxFunc(ctx, pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `SELECT limits FROM account_protection WHERE account_id = $1`, followerID).Scan(&p.Limits)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT follower_id, link_id, coalesce(lease_epoch, 0), state, reset_gen, updated_at
			FROM protection_state WHERE follower_id = $1`, followerID)
		if err != nil {
			return err
		}
		list, err := pgx.CollectRows(rows, scanProtectionRow)
		if err != nil {
			return err
		}
		p.States = make(map[int64]ProtectionRow, len(list))
		for _, r := range list {
			p.States[r.LinkID] = r
		}
		return nil
	})
	if err != nil {
		return Protection{}, fmt.Errorf("store: load protection of %d: %w", followerID, err)
	}
	return p, nil
}

func scanProtectionRow(row pgx.CollectableRow) (ProtectionRow, error) {
	var r ProtectionRow
	err := row.Scan(&r.FollowerID, &r.LinkID, &r.Epoch, &r.State, &r.ResetGen, &r.UpdatedAt)
	return r, err
}

// ProtectionStates returns the stored state of every scope of a follower, by link id.
func ProtectionStates(ctx context.Context, pool *pgxpool.Pool, followerID int64) ([]ProtectionRow, error) {
	rows, err := pool.Query(ctx, `SELECT follower_id, link_id, coalesce(lease_epoch, 0), state, reset_gen, updated_at
		FROM protection_state WHERE follower_id = $1 ORDER BY link_id`, followerID)
	if err != nil {
		return nil, fmt.Errorf("store: protection states of %d: %w", followerID, err)
	}
	out, err := pgx.CollectRows(rows, scanProtectionRow)
	if err != nil {
		return nil, fmt.Errorf("store: protection states of %d: %w", followerID, err)
	}
	return out, nil
}

// WriteProtectionFenced writes a batch of protection states (a statement per writeBatch), through the
// lease fence: a row lands only where the follower's node_id is this node and its
// lease_epoch is the row's epoch, and only if the row's reset generation is still the
// stored one (an operator reset in between wins).
func WriteProtectionFenced(ctx context.Context, pool *pgxpool.Pool, node string, rows []ProtectionRow) (FencedResult, error) {
	return inBatches(rows, writeBatch, func(batch []ProtectionRow) (FencedResult, error) {
		return writeProtectionFenced(ctx, pool, node, batch)
	})
}

func writeProtectionFenced(ctx context.Context, pool *pgxpool.Pool, node string, rows []ProtectionRow) (FencedResult, error) {
	rows = lastPerKey(rows, func(r ProtectionRow) [2]int64 { return [2]int64{r.FollowerID, r.LinkID} }, compareKey2)
	if len(rows) == 0 {
		return FencedResult{}, nil
	}
	n := len(rows)
	ids, links, epochs, docs, gens := make([]int64, n), make([]int64, n), make([]int64, n), make([]string, n), make([]int64, n)
	for i, r := range rows {
		ids[i], links[i], epochs[i], docs[i], gens[i] = r.FollowerID, r.LinkID, r.Epoch, string(r.State), r.ResetGen
	}
	tag, err := pool.Exec(ctx, `
		WITH s AS (
			SELECT * FROM unnest($2::bigint[], $3::bigint[], $4::bigint[], $5::text[], $6::bigint[])
				AS s(id, link_id, epoch, state, reset_gen)),
		owned AS (
			SELECT t.id, t.lease_epoch FROM trading_accounts t
			WHERE t.id = ANY($2::bigint[]) AND t.node_id = $1
			ORDER BY t.id
			FOR KEY SHARE OF t) -- see fenceLock
		INSERT INTO protection_state AS p (follower_id, link_id, state, reset_gen, node_id, lease_epoch)
		SELECT s.id, s.link_id, s.state::jsonb, s.reset_gen, $1, s.epoch
		FROM s JOIN owned o ON o.id = s.id AND o.lease_epoch = s.epoch
		ON CONFLICT (follower_id, link_id) DO UPDATE
		SET state = excluded.state, node_id = excluded.node_id, lease_epoch = excluded.lease_epoch, updated_at = now()
		WHERE p.reset_gen = excluded.reset_gen`, node, ids, links, epochs, docs, gens)
	if err != nil {
		return FencedResult{}, fmt.Errorf("store: write protection states: %w", err)
	}
	return FencedResult{Applied: tag.RowsAffected(), Refused: int64(n) - tag.RowsAffected()}, nil
}

// ErrNotStoppedOut is returned by ResetProtection when the scope has no stop-out to reset.
var ErrNotStoppedOut = errors.New("store: not stopped out")

// ResetProtection ends a stop-out at an operator's request. In one transaction it locks
// the scope's state, passes it and the follower's last reported equity to reset (which
// returns the new state, or an error such as ErrNotStoppedOut that leaves everything as it
// was), stores the new state under the next reset generation and bumps the follower's
// configuration, so that its owner reloads and adopts it. A scope with no stored state is
// ErrNotStoppedOut; an unknown follower ErrNotFound.
func ResetProtection(ctx context.Context, pool *pgxpool.Pool, followerID, linkID int64, reset func(state []byte, equity float64) ([]byte, error)) error {
	err := pgx.BeginTxFunc(ctx, pool, pgx.TxOptions{}, func(tx pgx.Tx) error {
		var equity float64
		err := tx.QueryRow(ctx, `SELECT coalesce(equity, 0) FROM trading_accounts WHERE id = $1 FOR UPDATE`, followerID).Scan(&equity)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("%w: account %d", ErrNotFound, followerID)
		}
		if err != nil {
			return err
		}
		var state []byte
		err = tx.QueryRow(ctx, `SELECT state FROM protection_state WHERE follower_id = $1 AND link_id = $2 FOR UPDATE`,
			followerID, linkID).Scan(&state)
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrNotStoppedOut
		}
		if err != nil {
			return err
		}
		next, err := reset(state, equity)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE protection_state SET state = $3::jsonb, reset_gen = reset_gen + 1, updated_at = now()
			WHERE follower_id = $1 AND link_id = $2`, followerID, linkID, string(next)); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE trading_accounts SET config_version = config_version + 1 WHERE id = $1`, followerID)
		return err
	})
	if err != nil && !errors.Is(err, ErrNotStoppedOut) && !errors.Is(err, ErrNotFound) {
		return fmt.Errorf("store: reset protection of %d/%d: %w", followerID, linkID, err)
	}
	return err
}

// SetAccountProtection stores a follower's own limits (JSON of reconcile/protect.Limits);
// nil or "{}" removes them. The owner reloads at its next cycle. ErrNotFound for an unknown
// account.
func SetAccountProtection(ctx context.Context, pool *pgxpool.Pool, accountID int64, limits []byte) error {
	err := pgx.BeginTxFunc(ctx, pool, pgx.TxOptions{}, func(tx pgx.Tx) error {
		var one int
		if err := tx.QueryRow(ctx, `SELECT 1 FROM trading_accounts WHERE id = $1`, accountID).Scan(&one); errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("%w: account %d", ErrNotFound, accountID)
		} else if err != nil {
			return err
		}
		if len(limits) == 0 || string(limits) == "{}" || string(limits) == "null" {
			_, err := tx.Exec(ctx, `DELETE FROM account_protection WHERE account_id = $1`, accountID)
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO account_protection (account_id, limits) VALUES ($1, $2::jsonb)
			ON CONFLICT (account_id) DO UPDATE SET limits = excluded.limits`, accountID, string(limits))
		return err
	})
	if err != nil && !errors.Is(err, ErrNotFound) {
		return fmt.Errorf("store: set protection of %d: %w", accountID, err)
	}
	return err
}

// AccountProtection returns a follower's own limits (JSON), nil when none are set.
func AccountProtection(ctx context.Context, pool *pgxpool.Pool, accountID int64) ([]byte, error) {
	var limits []byte
	err := pool.QueryRow(ctx, `SELECT limits FROM account_protection WHERE account_id = $1`, accountID).Scan(&limits)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("store: protection of %d: %w", accountID, err)
	}
	return limits, nil
}
