// Package store owns the database: the schema and its migrations, every SQL statement the
// engine runs, the one-transaction lease cycle, and the fenced batched writes. Nothing
// outside this package writes SQL.
//
// Ownership of a follower account is a lease on its own trading_accounts row (node_id,
// lease_until, lease_epoch). A lease cycle releases, renews and claims in one transaction
// (LeaseCycle); status and ticket-map writes carry node_id and lease_epoch in their WHERE
// so a node that lost an account cannot overwrite what the new owner wrote.
//
// Migrations live in migrations/NNNN_name.sql; from version 7 on they are numbered without
// gaps or shared numbers (the next one is the last plus one), which Migrations checks.
package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Options tune the connection pool.
type Options struct {
	// MaxConns bounds the pool (default 8).
	MaxConns int32
	// IdleInTransactionTimeout ends a session stuck inside a transaction and frees its row
	// locks (default 10 s), so a hung lease cycle cannot block the cluster.
	IdleInTransactionTimeout time.Duration
	// StatementTimeout bounds every statement on the server side (default 30 s); calls
	// also carry their own context deadlines.
	StatementTimeout time.Duration
	// ApplicationName shows in pg_stat_activity (default "copier").
	ApplicationName string
}

// ErrBadURL reports a database URL that cannot be parsed.
var ErrBadURL = errors.New("store: bad database URL")

// Open parses url, applies the session settings and returns a pool. It does not wait for
// the server: the first query does. A URL that cannot be parsed yields ErrBadURL.
func Open(ctx context.Context, url string, o Options) (*pgxpool.Pool, error) {
	cfg, err := ParseConfig(url, o)
	if err != nil {
		return nil, err
	}
	return OpenConfig(ctx, cfg)
}

// OpenConfig returns a pool for a configuration from ParseConfig.
func OpenConfig(ctx context.Context, cfg *pgxpool.Config) (*pgxpool.Pool, error) {
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	return pool, nil
}

// ParseConfig validates url and returns the pool configuration Open uses, without
// connecting. The error never echoes the URL (it may hold a password).
func ParseConfig(url string, o Options) (*pgxpool.Config, error) {
	if url == "" {
		return nil, fmt.Errorf("%w: empty", ErrBadURL)
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("%w: expected postgres://user:password@host:port/dbname", ErrBadURL)
	}
	if o.MaxConns <= 0 {
		o.MaxConns = 8
	}
	if o.IdleInTransactionTimeout <= 0 {
		o.IdleInTransactionTimeout = 10 * time.Second
	}
	if o.StatementTimeout <= 0 {
		o.StatementTimeout = 30 * time.Second
	}
	if o.ApplicationName == "" {
		o.ApplicationName = "copier"
	}
	cfg.MaxConns = o.MaxConns
	rp := cfg.ConnConfig.RuntimeParams
	rp["idle_in_transaction_session_timeout"] = strconv.FormatInt(o.IdleInTransactionTimeout.Milliseconds(), 10)
	rp["statement_timeout"] = strconv.FormatInt(o.StatementTimeout.Milliseconds(), 10)
	rp["application_name"] = o.ApplicationName
	// Plan every statement's execution with its real parameters. After five runs PostgreSQL
	// may switch a named prepared statement to a generic plan; for the renewal join over
	// unnest() that plan is a nested loop that took 9.6 s instead of 31 ms at 10,000 owned
	// rows (measured). So no statement is prepared by name: each runs as the unnamed
	// statement (its description cached, still one round trip), which PostgreSQL plans
	// afresh for its parameters every time. The session keeps plan_cache_mode at auto
	// (whatever the server's default): forcing custom plans for the session would also
	// re-plan the queries of the server's own foreign-key checks and triggers on every
	// row, which a generic plan serves as well (a ticket-map insert's two key checks took
	// 24 of its 32 µs of backend CPU so).
	cfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeCacheDescribe
	rp["plan_cache_mode"] = "auto"
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = 5 * time.Second
	}
	return cfg, nil
}

// UniqueViolation reports whether err is a unique-constraint violation, and which
// constraint ("trading_accounts_pkey", "copy_links_master_id_follower_id_key", ...).
func UniqueViolation(err error) (constraint string, ok bool) {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23505" {
		return pe.ConstraintName, true
	}
	return "", false
}
