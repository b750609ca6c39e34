package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Role is an account's role in copying.
type Role string

// Roles.
const (
	RoleMaster   Role = "master"
	RoleFollower Role = "follower"
)

// Valid reports whether r is a known role.
func (r Role) Valid() bool { return r == RoleMaster || r == RoleFollower }

// Account is a trading_accounts row as configured (not its lease or status).
type Account struct {
	ID          int64
	Platform    string
	Role        Role
	Enabled     bool
	Login       string
	Server      string
	Credentials []byte // sealed; the engine unseals it only to connect
	// CloseOnly is the follower's own close-only mode: "", "let_close" or "close_now"
	// (reconcile/protect.CloseOnly); it applies to every link of the follower.
	CloseOnly string
	// FIX is the account's FIX session settings (column fix_session); zero when it has none.
	FIX FIXSession
}

// FIXSession is an account's FIX 4.4 session settings (broker/fix). Empty fields fall back
// to the legacy server-field syntax and then to the node's FIX configuration.
type FIXSession struct {
	SenderCompID string `json:"sender_comp_id,omitempty"`
	SenderSubID  string `json:"sender_sub_id,omitempty"`
	TargetCompID string `json:"target_comp_id,omitempty"`
	TargetSubID  string `json:"target_sub_id,omitempty"`
	// Username is the Logon's user name (tag 553); empty: the account's login.
	Username string `json:"username,omitempty"`
	// Dialect is the venue's FIX dialect ("ctrader", "fix44"); empty: the node's default.
	Dialect string `json:"dialect,omitempty"`
}

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

// FollowerConfig is what a node needs to copy to one follower: the account, its enabled
// links, and the masters those links read.
type FollowerConfig struct {
	Account       Account
	ConfigVersion int64
	Links         []Link
	Masters       map[int64]Account
}

// ErrNotFound reports a missing row.
var ErrNotFound = errors.New("store: not found")

const accountColumns = `id, platform, role, enabled, login, server, credentials, close_only, fix_session`

func scanAccount(row pgx.CollectableRow) (Account, error) {
	var a Account
	var role string
	err := row.Scan(accountFields(&a, &role)...)
	a.Role = Role(role)
	return a, err
}

// accountFields are the scan destinations of accountColumns, in order (the role as text).
func accountFields(a *Account, role *string) []any {
	return []any{&a.ID, &a.Platform, role, &a.Enabled, &a.Login, &a.Server, &a.Credentials, &a.CloseOnly, &a.FIX}
}

const linkColumns = `id, master_id, follower_id, enabled, magic, settings, version`

func scanLink(row pgx.CollectableRow) (Link, error) {
	var l Link
	err := row.Scan(&l.ID, &l.MasterID, &l.FollowerID, &l.Enabled, &l.Magic, &l.Settings, &l.Version)
	return l, err
}

// LoadFollowerConfig reads one follower's account, enabled links and their masters in one
// snapshot.
func LoadFollowerConfig(ctx context.Context, pool *pgxpool.Pool, followerID int64) (FollowerConfig, error) {
	var cfg FollowerConfig
	err := pgx.BeginTxFunc(ctx, pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT `+accountColumns+`, config_version FROM trading_accounts WHERE id = $1`, followerID)
		if err != nil {
			return err
		}
		accs, err := pgx.CollectRows(rows, scanFollowerConfig)
		if err != nil {
			return err
		}
		if len(accs) == 0 {
			return fmt.Errorf("%w: account %d", ErrNotFound, followerID)
		}
		cfg = accs[0]
		rows, err = tx.Query(ctx, `SELECT `+linkColumns+` FROM copy_links WHERE follower_id = $1 AND enabled ORDER BY id`, followerID)
		if err != nil {
			return err
		}
		if cfg.Links, err = pgx.CollectRows(rows, scanLink); err != nil {
			return err
		}
		rows, err = tx.Query(ctx, `SELECT `+accountColumns+` FROM trading_accounts
			WHERE id IN (SELECT master_id FROM copy_links WHERE follower_id = $1 AND enabled) AND enabled`, followerID)
		if err != nil {
			return err
		}
		masters, err := pgx.CollectRows(rows, scanAccount)
		if err != nil {
			return err
		}
		cfg.Masters = make(map[int64]Account, len(masters))
		for _, m := range masters {
			cfg.Masters[m.ID] = m
		}
		return nil
	})
	if err != nil {
		return FollowerConfig{}, fmt.Errorf("store: load follower %d: %w", followerID, err)
	}
	return cfg, nil
}

// scanFollowerConfig scans accountColumns and config_version.
func scanFollowerConfig(row pgx.CollectableRow) (FollowerConfig, error) {
	var c FollowerConfig
	var role string
	err := row.Scan(append(accountFields(&c.Account, &role), &c.ConfigVersion)...)
	c.Account.Role = Role(role)
	return c, err
}

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

// CreateAccount inserts an account. Its id is chosen by the caller (it is the broker-side
// identity operators already use).
func CreateAccount(ctx context.Context, pool *pgxpool.Pool, a Account) error {
	if !a.Role.Valid() {
		return fmt.Errorf("store: role %q must be master or follower", a.Role)
	}
	_, err := pool.Exec(ctx, `INSERT INTO trading_accounts (id, platform, role, enabled, login, server, credentials, close_only, fix_session)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`, a.ID, a.Platform, string(a.Role), a.Enabled, a.Login, a.Server, a.Credentials, a.CloseOnly, a.FIX)
	if err != nil {
		return fmt.Errorf("store: create account %d: %w", a.ID, err)
	}
	return nil
}

// SetAccountEnabled switches an account on or off. A switched-off follower is released by
// its owner in the owner's next lease cycle.
func SetAccountEnabled(ctx context.Context, pool *pgxpool.Pool, id int64, enabled bool) error {
	// Only a change is written: switching an account to the state it is in touches nothing.
	var found bool
	err := pool.QueryRow(ctx, `WITH u AS (UPDATE trading_accounts SET enabled = $2 WHERE id = $1 AND enabled <> $2 RETURNING 1)
		SELECT EXISTS (SELECT 1 FROM trading_accounts WHERE id = $1)`, id, enabled).Scan(&found)
	if err != nil {
		return fmt.Errorf("store: enable account %d: %w", id, err)
	}
	if !found {
		return fmt.Errorf("%w: account %d", ErrNotFound, id)
	}
	return nil
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

// LeaseRow is an account's ownership as the database sees it.
type LeaseRow struct {
	ID         int64
	NodeID     string // "" when free
	Epoch      int64
	LeaseUntil time.Time // zero when free
}

// Leases returns the ownership of the given accounts (all followers when ids is nil).
func Leases(ctx context.Context, pool *pgxpool.Pool, ids []int64) ([]LeaseRow, error) {
	rows, err := pool.Query(ctx, `SELECT id, coalesce(node_id, ''), lease_epoch, lease_until FROM trading_accounts
		WHERE role = 'follower' AND ($1::bigint[] IS NULL OR id = ANY($1)) ORDER BY id`, ids)
	if err != nil {
		return nil, fmt.Errorf("store: leases: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (LeaseRow, error) {
		var l LeaseRow
		var until *time.Time
		err := row.Scan(&l.ID, &l.NodeID, &l.Epoch, &until)
		if until != nil {
			l.LeaseUntil = *until
		}
		return l, err
	})
	if err != nil {
		return nil, fmt.Errorf("store: leases: %w", err)
	}
	return out, nil
}
