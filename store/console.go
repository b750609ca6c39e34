package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// This file holds the queries of the operator console (cmd/copierd/console): searching and
// paging accounts, the cluster's lease summary, editing accounts and links. None of them
// touches a lease: switching an account off or changing its role or platform is picked up
// by its owner's next lease cycle, which releases it.

// AccountRow is a trading_accounts row as an operator sees it: configuration, lease and the
// status its owner reported. It never carries the credentials, only whether there are any.
type AccountRow struct {
	ID             int64
	Platform       string
	Role           Role
	Enabled        bool
	Login          string
	Server         string
	HasCredentials bool
	NodeID         string    // "" when free
	LeaseUntil     time.Time // zero when free; by the database's clock
	// LeaseLeft is LeaseUntil minus the database's now() at query time (negative: expired;
	// zero when free), so a console never compares its own clock with the database's.
	LeaseLeft     time.Duration
	Epoch         int64
	ConfigVersion int64
	Status        string
	LastError     string
	Balance       *float64 // nil until the owner reported one
	Equity        *float64
	StatusAt      time.Time // zero: never reported
	LastCopyAt    time.Time // zero: never copied
	CreatedAt     time.Time
	CloseOnly     string     // the follower's own close-only mode (Account.CloseOnly)
	FIX           FIXSession // the FIX session settings (Account.FIX)
}

const accountRowColumns = `id, platform, role, enabled, login, server, credentials IS NOT NULL AND length(credentials) > 0,
	coalesce(node_id, ''), lease_until, coalesce(extract(epoch FROM lease_until - now()), 0)::float8,
	lease_epoch, config_version, status, last_error, balance, equity, status_at, last_copy_at, created_at, close_only, fix_session`

func scanAccountRow(row pgx.CollectableRow) (AccountRow, error) {
	var a AccountRow
	var role string
	var leaseUntil, statusAt, lastCopy *time.Time
	var left float64
	err := row.Scan(&a.ID, &a.Platform, &role, &a.Enabled, &a.Login, &a.Server, &a.HasCredentials,
		&a.NodeID, &leaseUntil, &left, &a.Epoch, &a.ConfigVersion, &a.Status, &a.LastError,
		&a.Balance, &a.Equity, &statusAt, &lastCopy, &a.CreatedAt, &a.CloseOnly, &a.FIX)
	a.Role = Role(role)
	a.LeaseUntil, a.StatusAt, a.LastCopyAt = derefTime(leaseUntil), derefTime(statusAt), derefTime(lastCopy)
	a.LeaseLeft = time.Duration(left * float64(time.Second))
	return a, err
}

func derefTime(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}

// AccountQuery selects accounts for SearchAccounts. Empty fields do not filter.
type AccountQuery struct {
	// Search matches an id exactly, or a substring of the login, server or owning node
	// (case-insensitive).
	Search   string
	Role     Role
	Platform string
	Node     string // owning node id, exactly
	Status   string // reported status, exactly ("copying", "failed", ...)
	Enabled  *bool
	// Problems selects accounts with a last error or a failed or dirty status.
	Problems bool
	Offset   int
	Limit    int // default 50, at most 500
}

// AccountPage is one page of SearchAccounts.
type AccountPage struct {
	Rows  []AccountRow
	Total int // matching rows in all pages
}

// MaxPageSize bounds AccountQuery.Limit and LinkQuery.Limit.
const MaxPageSize = 500

// likePattern escapes LIKE metacharacters and wraps s in %…%.
func likePattern(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return "%" + r.Replace(s) + "%"
}

// SearchAccounts returns one page of accounts in id order and the number of matches. The
// page follows the primary key; the filters are bound parameters.
func SearchAccounts(ctx context.Context, pool *pgxpool.Pool, q AccountQuery) (AccountPage, error) {
	if q.Limit <= 0 {
		q.Limit = 50
	}
	q.Limit = min(q.Limit, MaxPageSize)
	q.Offset = max(q.Offset, 0)
	search := strings.TrimSpace(q.Search)
	var idMatch *int64
	if n, ok := parseID(search); ok {
		idMatch = &n
	}
	var like *string
	if search != "" {
		p := likePattern(search)
		like = &p
	}
	args := []any{like, idMatch, nullIfEmpty(string(q.Role)), nullIfEmpty(q.Platform), nullIfEmpty(q.Node),
		nullIfEmpty(q.Status), q.Enabled, q.Problems}
	const where = `
		WHERE ($1::text IS NULL OR id = $2::bigint OR login ILIKE $1 OR server ILIKE $1 OR node_id ILIKE $1)
		  AND ($3::text IS NULL OR role = $3)
		  AND ($4::text IS NULL OR platform = $4)
		  AND ($5::text IS NULL OR node_id = $5)
		  AND ($6::text IS NULL OR status = $6)
		  AND ($7::boolean IS NULL OR enabled = $7)
		  AND (NOT $8::boolean OR last_error <> '' OR status IN ('failed', 'dirty'))`
	var page AccountPage
	err := pgx.BeginTxFunc(ctx, pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM trading_accounts`+where, args...).Scan(&page.Total); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT `+accountRowColumns+` FROM trading_accounts`+where+`
			ORDER BY id LIMIT $9 OFFSET $10`, append(args, q.Limit, q.Offset)...)
		if err != nil {
			return err
		}
		page.Rows, err = pgx.CollectRows(rows, scanAccountRow)
		return err
	})
	if err != nil {
		return AccountPage{}, fmt.Errorf("store: search accounts: %w", err)
	}
	return page, nil
}

func parseID(s string) (int64, bool) {
	if s == "" || len(s) > 19 {
		return 0, false
	}
	var n int64
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

func nullIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// GetAccountRow returns one account as an operator sees it, or ErrNotFound.
func GetAccountRow(ctx context.Context, pool *pgxpool.Pool, id int64) (AccountRow, error) {
	rows, err := pool.Query(ctx, `SELECT `+accountRowColumns+` FROM trading_accounts WHERE id = $1`, id)
	if err != nil {
		return AccountRow{}, fmt.Errorf("store: account %d: %w", id, err)
	}
	a, err := pgx.CollectExactlyOneRow(rows, scanAccountRow)
	if errors.Is(err, pgx.ErrNoRows) {
		return AccountRow{}, fmt.Errorf("%w: account %d", ErrNotFound, id)
	}
	if err != nil {
		return AccountRow{}, fmt.Errorf("store: account %d: %w", id, err)
	}
	return a, nil
}

// AccountPlatforms returns the distinct platforms of all accounts, sorted.
func AccountPlatforms(ctx context.Context, pool *pgxpool.Pool) ([]string, error) {
	rows, err := pool.Query(ctx, `SELECT DISTINCT platform FROM trading_accounts ORDER BY platform`)
	if err != nil {
		return nil, fmt.Errorf("store: platforms: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("store: platforms: %w", err)
	}
	return out, nil
}

// NodeLeases summarises the leases one node holds, as the database sees them.
type NodeLeases struct {
	NodeID    string
	Platforms []string
	Accounts  int // rows whose node_id is this node
	Live      int // of which lease_until is still in the future
	// Earliest and Latest are the earliest and latest lease_until; EarliestLeft and
	// LatestLeft are the same relative to the database's now().
	Earliest, Latest         time.Time
	EarliestLeft, LatestLeft time.Duration
}

// AccountTotals counts accounts for the cluster page.
type AccountTotals struct {
	DBTime    time.Time // the database's now()
	Masters   int
	Followers int
	Disabled  int
	// Unowned are enabled followers without a live lease (free or expired).
	Unowned int
	Errors  int // accounts with a last error
}

// ClusterLeases returns every node that owns at least one account (grouped by node_id, in
// node order) and the account totals, read in one snapshot.
func ClusterLeases(ctx context.Context, pool *pgxpool.Pool) ([]NodeLeases, AccountTotals, error) {
	var nodes []NodeLeases
	var tot AccountTotals
	err := pgx.BeginTxFunc(ctx, pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `
			SELECT node_id, array_agg(DISTINCT platform ORDER BY platform), count(*)::int,
			       (count(*) FILTER (WHERE lease_until > now()))::int,
			       min(lease_until), max(lease_until),
			       coalesce(extract(epoch FROM min(lease_until) - now()), 0)::float8,
			       coalesce(extract(epoch FROM max(lease_until) - now()), 0)::float8
			FROM trading_accounts WHERE node_id IS NOT NULL
			GROUP BY node_id ORDER BY node_id`)
		if err != nil {
			return err
		}
		nodes, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (NodeLeases, error) {
			var n NodeLeases
			var earliest, latest *time.Time
			var el, ll float64
			err := row.Scan(&n.NodeID, &n.Platforms, &n.Accounts, &n.Live, &earliest, &latest, &el, &ll)
			n.Earliest, n.Latest = derefTime(earliest), derefTime(latest)
			n.EarliestLeft, n.LatestLeft = time.Duration(el*float64(time.Second)), time.Duration(ll*float64(time.Second))
			return n, err
		})
		if err != nil {
			return err
		}
		return tx.QueryRow(ctx, `
			SELECT now(),
			       (count(*) FILTER (WHERE role = 'master'))::int,
			       (count(*) FILTER (WHERE role = 'follower'))::int,
			       (count(*) FILTER (WHERE NOT enabled))::int,
			       (count(*) FILTER (WHERE role = 'follower' AND enabled
			                         AND (node_id IS NULL OR lease_until IS NULL OR lease_until <= now())))::int,
			       (count(*) FILTER (WHERE last_error <> ''))::int
			FROM trading_accounts`).Scan(&tot.DBTime, &tot.Masters, &tot.Followers, &tot.Disabled, &tot.Unowned, &tot.Errors)
	})
	if err != nil {
		return nil, AccountTotals{}, fmt.Errorf("store: cluster leases: %w", err)
	}
	return nodes, tot, nil
}

// UnownedFollowers counts the platform's enabled followers without a live lease (free, or
// their lease ran out): nobody copies to them. A failover leaves some for up to one lease;
// more for longer means the platform lacks capacity or its nodes fail their cycles.
func UnownedFollowers(ctx context.Context, pool *pgxpool.Pool, platform string) (int, error) {
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM trading_accounts
		WHERE platform = $1 AND role = 'follower' AND enabled
		  AND (node_id IS NULL OR lease_until IS NULL OR lease_until <= now())`, platform).Scan(&n); err != nil {
		return 0, fmt.Errorf("store: unowned followers of %s: %w", platform, err)
	}
	return n, nil
}

// CountOwnedBy returns how many accounts name node as their owner.
func CountOwnedBy(ctx context.Context, pool *pgxpool.Pool, node string) (int, error) {
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM trading_accounts WHERE node_id = $1`, node).Scan(&n); err != nil {
		return 0, fmt.Errorf("store: count owned by %s: %w", node, err)
	}
	return n, nil
}

// AccountUpdate changes an account's configuration. Nil fields keep their value.
type AccountUpdate struct {
	ID       int64
	Platform *string
	Role     *Role
	Enabled  *bool
	Login    *string
	Server   *string
	// SetCredentials replaces the stored (sealed) credentials with Credentials; an empty
	// Credentials removes them. Without it the credentials are kept.
	SetCredentials bool
	Credentials    []byte
	CloseOnly      *string     // "", "let_close" or "close_now"; nil: unchanged
	FIX            *FIXSession // replaces the FIX session settings; nil: unchanged
}

// ErrRoleInUse reports a role change of an account that links use in its current role.
var ErrRoleInUse = errors.New("store: the account's links need its current role")

// UpdateAccount applies u in one transaction. A role change is refused with ErrRoleInUse
// while a link uses the account in its current role. Changing login, server or
// credentials moves the config version (a trigger), so the owner reconnects; so does
// changing the close-only mode, so the owner reloads; disabling
// the account, or changing its role or platform, makes the owner release it in its next
// lease cycle. It returns ErrNotFound for an unknown id.
func UpdateAccount(ctx context.Context, pool *pgxpool.Pool, u AccountUpdate) error {
	if u.Role != nil && !u.Role.Valid() {
		return fmt.Errorf("store: role %q must be master or follower", *u.Role)
	}
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		var role string
		if err := tx.QueryRow(ctx, `SELECT role FROM trading_accounts WHERE id = $1 FOR UPDATE`, u.ID).Scan(&role); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return fmt.Errorf("%w: account %d", ErrNotFound, u.ID)
			}
			return err
		}
		if u.Role != nil && string(*u.Role) != role {
			var n int
			if err := tx.QueryRow(ctx, `SELECT count(*) FROM copy_links WHERE
				CASE WHEN $2 = 'master' THEN master_id = $1 ELSE follower_id = $1 END`, u.ID, role).Scan(&n); err != nil {
				return err
			}
			if n > 0 {
				return fmt.Errorf("%w: account %d is the %s of %d link(s)", ErrRoleInUse, u.ID, role, n)
			}
		}
		var role2 *string
		if u.Role != nil {
			r := string(*u.Role)
			role2 = &r
		}
		var creds []byte
		if u.SetCredentials && len(u.Credentials) > 0 {
			creds = u.Credentials
		}
		_, err := tx.Exec(ctx, `UPDATE trading_accounts SET
				platform = coalesce($2, platform), role = coalesce($3, role), enabled = coalesce($4, enabled),
				login = coalesce($5, login), server = coalesce($6, server),
				credentials = CASE WHEN $7 THEN $8 ELSE credentials END,
				close_only = coalesce($9, close_only), fix_session = coalesce($10, fix_session)
			WHERE id = $1`, u.ID, u.Platform, role2, u.Enabled, u.Login, u.Server, u.SetCredentials, creds, u.CloseOnly, u.FIX)
		return err
	})
	if err != nil {
		if errors.Is(err, ErrNotFound) || errors.Is(err, ErrRoleInUse) {
			return err
		}
		return fmt.Errorf("store: update account %d: %w", u.ID, err)
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

// UniqueViolation reports whether err is a unique-constraint violation, and which
// constraint ("trading_accounts_pkey", "copy_links_master_id_follower_id_key", ...).
func UniqueViolation(err error) (constraint string, ok bool) {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23505" {
		return pe.ConstraintName, true
	}
	return "", false
}

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
