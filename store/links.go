package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Queries of copy_links: the links between masters and followers, their magic numbers and
// settings.

// Link is a copy_links row.
type Link struct {
	ID         int64
	MasterID   int64
	FollowerID int64
	Enabled    bool
	Magic      int64
	Settings   []byte // JSON, see reconcile.Settings
	Version    int64
}

const linkColumns = `id, master_id, follower_id, enabled, magic, settings, version`

func scanLink(row pgx.CollectableRow) (Link, error) {
	var l Link
	err := row.Scan(&l.ID, &l.MasterID, &l.FollowerID, &l.Enabled, &l.Magic, &l.Settings, &l.Version)
	return l, err
}

// CreateLink inserts a link and returns its id. The follower's config version moves, so
// its owner reloads it in the next cycle.
func CreateLink(ctx context.Context, pool *pgxpool.Pool, l Link) (int64, error) {
	if len(l.Settings) == 0 {
		l.Settings = []byte("{}")
	}
	var id int64
	err := pool.QueryRow(ctx, `INSERT INTO copy_links (master_id, follower_id, enabled, magic, settings)
		VALUES ($1, $2, $3, $4, $5) RETURNING id`, l.MasterID, l.FollowerID, l.Enabled, l.Magic, l.Settings).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("store: create link %d→%d: %w", l.MasterID, l.FollowerID, magicClash(err, l))
	}
	return id, nil
}

// magicClash marks a write refused by UNIQUE (follower_id, magic) as ErrMagicClash (the
// database error stays in the chain).
func magicClash(err error, l Link) error {
	if c, ok := UniqueViolation(err); ok && c == LinkMagicConstraint {
		return fmt.Errorf("%w (follower %d, magic %d): %w", ErrMagicClash, l.FollowerID, l.Magic, err)
	}
	return err
}

// UpdateLink changes a link's enabled flag, magic and settings, and bumps its version.
func UpdateLink(ctx context.Context, pool *pgxpool.Pool, l Link) error {
	tag, err := pool.Exec(ctx, `UPDATE copy_links SET enabled = $2, magic = $3, settings = $4, version = version + 1, updated_at = now()
		WHERE id = $1`, l.ID, l.Enabled, l.Magic, l.Settings)
	if err != nil {
		return fmt.Errorf("store: update link %d: %w", l.ID, magicClash(err, l))
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("%w: link %d", ErrNotFound, l.ID)
	}
	return nil
}

// LinkRow is a copy_links row with the logins of its two accounts.
type LinkRow struct {
	Link
	MasterLogin     string
	FollowerLogin   string
	MasterEnabled   bool
	FollowerEnabled bool
	CreatedAt       time.Time
	UpdatedAt       time.Time
}

const linkRowQuery = `SELECT l.id, l.master_id, l.follower_id, l.enabled, l.magic, l.settings, l.version,
	m.login, f.login, m.enabled, f.enabled, l.created_at, l.updated_at
	FROM copy_links l JOIN trading_accounts m ON m.id = l.master_id JOIN trading_accounts f ON f.id = l.follower_id`

func scanLinkRow(row pgx.CollectableRow) (LinkRow, error) {
	var l LinkRow
	err := row.Scan(&l.ID, &l.MasterID, &l.FollowerID, &l.Enabled, &l.Magic, &l.Settings, &l.Version,
		&l.MasterLogin, &l.FollowerLogin, &l.MasterEnabled, &l.FollowerEnabled, &l.CreatedAt, &l.UpdatedAt)
	return l, err
}

// LinkQuery selects links for FindLinks. Zero fields do not filter.
type LinkQuery struct {
	AccountID  int64 // links whose master or follower is this account
	MasterID   int64
	FollowerID int64
	Offset     int
	Limit      int // default 100, at most MaxPageSize
}

// FindLinks returns links in id order, and the number of matches.
func FindLinks(ctx context.Context, pool *pgxpool.Pool, q LinkQuery) ([]LinkRow, int, error) {
	if q.Limit <= 0 {
		q.Limit = 100
	}
	q.Limit = min(q.Limit, MaxPageSize)
	q.Offset = max(q.Offset, 0)
	const where = `
		WHERE ($1::bigint = 0 OR l.master_id = $1 OR l.follower_id = $1)
		  AND ($2::bigint = 0 OR l.master_id = $2)
		  AND ($3::bigint = 0 OR l.follower_id = $3)`
	args := []any{q.AccountID, q.MasterID, q.FollowerID}
	var out []LinkRow
	var total int
	err := pgx.BeginTxFunc(ctx, pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM copy_links l`+where, args...).Scan(&total); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, linkRowQuery+where+` ORDER BY l.id LIMIT $4 OFFSET $5`, append(args, q.Limit, q.Offset)...)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, scanLinkRow)
		return err
	})
	if err != nil {
		return nil, 0, fmt.Errorf("store: find links: %w", err)
	}
	return out, total, nil
}

// GetLinkRow returns one link, or ErrNotFound.
func GetLinkRow(ctx context.Context, pool *pgxpool.Pool, id int64) (LinkRow, error) {
	rows, err := pool.Query(ctx, linkRowQuery+` WHERE l.id = $1`, id)
	if err != nil {
		return LinkRow{}, fmt.Errorf("store: link %d: %w", id, err)
	}
	l, err := pgx.CollectExactlyOneRow(rows, scanLinkRow)
	if errors.Is(err, pgx.ErrNoRows) {
		return LinkRow{}, fmt.Errorf("%w: link %d", ErrNotFound, id)
	}
	if err != nil {
		return LinkRow{}, fmt.Errorf("store: link %d: %w", id, err)
	}
	return l, nil
}

// SetLinkEnabled switches a link on or off and bumps its version (and, by trigger, its
// follower's config version, so the owner reloads it).
func SetLinkEnabled(ctx context.Context, pool *pgxpool.Pool, id int64, enabled bool) error {
	// Only a change is written: a no-op would bump the link's version and, through the
	// trigger, its follower's config version, and make the owner reload for nothing.
	var found bool
	err := pool.QueryRow(ctx, `WITH u AS (UPDATE copy_links SET enabled = $2, version = version + 1, updated_at = now()
			WHERE id = $1 AND enabled <> $2 RETURNING 1)
		SELECT EXISTS (SELECT 1 FROM copy_links WHERE id = $1)`, id, enabled).Scan(&found)
	if err != nil {
		return fmt.Errorf("store: enable link %d: %w", id, err)
	}
	if !found {
		return fmt.Errorf("%w: link %d", ErrNotFound, id)
	}
	return nil
}

// MagicInUse reports whether another link of the follower (not exceptLink) uses magic.
func MagicInUse(ctx context.Context, pool *pgxpool.Pool, followerID, magic, exceptLink int64) (bool, error) {
	var used bool
	err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM copy_links WHERE follower_id = $1 AND magic = $2 AND id <> $3)`,
		followerID, magic, exceptLink).Scan(&used)
	if err != nil {
		return false, fmt.Errorf("store: magic in use: %w", err)
	}
	return used, nil
}

// LinkMagicConstraint is the constraint that keeps magic numbers unique per follower.
const LinkMagicConstraint = "copy_links_follower_magic_key"
