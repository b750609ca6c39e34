package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Queries of console_revoked_sessions: console sessions ended by a logout, shared by every
// console process.

// RevokeSession records that the console session id ended (logout) before expires; it
// also drops the records of sessions that have expired by now.
func RevokeSession(ctx context.Context, pool *pgxpool.Pool, id string, expires time.Time) error {
	_, err := pool.Exec(ctx, `WITH gone AS (DELETE FROM console_revoked_sessions WHERE expires_at < now())
		INSERT INTO console_revoked_sessions (session_id, expires_at) VALUES ($1, $2) ON CONFLICT (session_id) DO NOTHING`, id, expires)
	if err != nil {
		return fmt.Errorf("store: revoke session: %w", err)
	}
	return nil
}

// SessionRevoked reports whether the console session id was revoked.
func SessionRevoked(ctx context.Context, pool *pgxpool.Pool, id string) (bool, error) {
	var revoked bool
	if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM console_revoked_sessions WHERE session_id = $1)`, id).Scan(&revoked); err != nil {
		return false, fmt.Errorf("store: session revoked: %w", err)
	}
	return revoked, nil
}
