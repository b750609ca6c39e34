package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// A platform's FIX symbol list (platform_fix_symbols, migration 0014): the list of every
// account of the platform without one of its own, for a venue without SecurityList (the
// fix44 dialect). The precedence is the account's list, then its platform's, then the
// node's (?symbols=FILE): LoadFollowers and LoadFollowerConfig put the platform's list in
// Account.FIX.Symbols of each account (followers and their masters) that has none, and the
// node connects the account's session with it. A change of the platform's list reaches an
// account when its session is next made — when a node claims the account (a takeover, a
// restart, the follower disabled until free and enabled again) or a master feed connects
// anew — like a change of the account's own FIX settings: a reload of a running account's
// configuration does not reconnect its session. It moves no config_version.

// PlatformSymbols returns a platform's FIX symbol list; nil when it has none.
func PlatformSymbols(ctx context.Context, pool *pgxpool.Pool, platform string) ([]FIXSymbol, error) {
	var list []FIXSymbol
	err := pool.QueryRow(ctx, `SELECT symbols FROM platform_fix_symbols WHERE platform = $1`, platform).Scan(&list)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("store: symbols of platform %s: %w", platform, err)
	}
	return list, nil
}

// SetPlatformSymbols replaces a platform's FIX symbol list; an empty list removes it (its
// accounts without a list of their own use the node's). The caller checks the list's rules
// (fix.CheckSymbols); the table refuses only entries of the wrong types.
func SetPlatformSymbols(ctx context.Context, pool *pgxpool.Pool, platform string, list []FIXSymbol) error {
	var err error
	if len(list) == 0 {
		_, err = pool.Exec(ctx, `DELETE FROM platform_fix_symbols WHERE platform = $1`, platform)
	} else {
		_, err = pool.Exec(ctx, `INSERT INTO platform_fix_symbols (platform, symbols) VALUES ($1, $2)
			ON CONFLICT (platform) DO UPDATE SET symbols = EXCLUDED.symbols, updated_at = now()
			WHERE platform_fix_symbols.symbols IS DISTINCT FROM EXCLUDED.symbols`, platform, list)
	}
	if err != nil {
		return fmt.Errorf("store: set symbols of platform %s: %w", platform, err)
	}
	return nil
}

// PlatformSymbolCount returns how many symbols a platform's list has (0: none).
func PlatformSymbolCount(ctx context.Context, pool *pgxpool.Pool, platform string) (int, error) {
	var n int
	err := pool.QueryRow(ctx, `SELECT coalesce((SELECT jsonb_array_length(symbols) FROM platform_fix_symbols WHERE platform = $1), 0)`, platform).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("store: symbols of platform %s: %w", platform, err)
	}
	return n, nil
}

// PlatformSymbolCounts returns how many symbols each platform's list has, for the
// platforms that have one.
func PlatformSymbolCounts(ctx context.Context, pool *pgxpool.Pool) (map[string]int, error) {
	rows, err := pool.Query(ctx, `SELECT platform, jsonb_array_length(symbols) FROM platform_fix_symbols`)
	if err != nil {
		return nil, fmt.Errorf("store: platform symbol lists: %w", err)
	}
	out := map[string]int{}
	var p string
	var n int
	if _, err := pgx.ForEachRow(rows, []any{&p, &n}, func() error { out[p] = n; return nil }); err != nil {
		return nil, fmt.Errorf("store: platform symbol lists: %w", err)
	}
	return out, nil
}

// fillPlatformSymbols gives each account without a FIX symbol list of its own its
// platform's list, read in tx (the load's snapshot).
func fillPlatformSymbols(ctx context.Context, tx pgx.Tx, accounts []*Account) error {
	var platforms []string
	seen := map[string]bool{}
	for _, a := range accounts {
		if len(a.FIX.Symbols) == 0 && !seen[a.Platform] {
			seen[a.Platform] = true
			platforms = append(platforms, a.Platform)
		}
	}
	if len(platforms) == 0 {
		return nil
	}
	rows, err := tx.Query(ctx, `SELECT platform, symbols FROM platform_fix_symbols WHERE platform = ANY($1)`, platforms)
	if err != nil {
		return err
	}
	lists := map[string][]FIXSymbol{}
	var p string
	var list []FIXSymbol
	if _, err := pgx.ForEachRow(rows, []any{&p, &list}, func() error { lists[p] = list; list = nil; return nil }); err != nil {
		return err
	}
	for _, a := range accounts {
		if len(a.FIX.Symbols) == 0 {
			a.FIX.Symbols = lists[a.Platform]
		}
	}
	return nil
}
