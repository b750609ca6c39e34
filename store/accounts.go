package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/internal/pgparams"
)

// Queries of trading_accounts: the configured accounts, the operator's view of them (search,
// paging, the cluster's lease summary, edits) and the owners' fenced status writes. The
// lease cycle's statements live in lease.go. An edit never touches a lease: switching an
// account off or changing its role or platform is picked up by its owner's next lease
// cycle, which releases it.

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
	// As LoadFollowers and LoadFollowerConfig read it, FIX.Symbols is the list the account
	// trades by: its own, else its platform's (PlatformSymbols), else none (the node's).
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
	// Symbols is the account's own symbol list for a dialect without SecurityList (fix44);
	// empty: its platform's (PlatformSymbols), else the node's (fix.CheckSymbols has the
	// rules).
	Symbols []FIXSymbol `json:"symbols,omitempty"`
	// PositionMode is the account's position mode where the dialect cannot ask the venue
	// (fix44): "netting" or "hedging"; empty: the node's.
	PositionMode string `json:"position_mode,omitempty"`
}

// FIXSymbol is one symbol of an account's list, stored under the names of broker/fix's
// list file.
type FIXSymbol = broker.SymbolEntry

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
		accounts := []*Account{&cfg.Account}
		for i := range masters {
			accounts = append(accounts, &masters[i])
		}
		if err := fillPlatformSymbols(ctx, tx, accounts); err != nil {
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

// AccountStatus is one follower's reported state, written by its owner.
type AccountStatus struct {
	ID        int64
	Epoch     int64 // the writer's lease epoch: the row is written only if it still matches
	Status    string
	LastError string
	Balance   float64
	Equity    float64
	// EquityUnknown: the trade server does not say the balance and equity; both are
	// written as NULL (shown as unknown), never as 0.
	EquityUnknown bool
	At            time.Time
	LastCopyAt    time.Time // zero: unchanged
}

// statusChunk bounds one status statement: the rows it updates are the lease rows the
// cycle renews, so a smaller statement holds their locks for less time.
const statusChunk = 500

// WriteStatusesFenced writes a batch of statuses, statusChunk rows per statement. Each row
// is written only where node_id is this node and lease_epoch is the row's epoch: a node
// that lost an account cannot overwrite what the new owner wrote, even from a queue.
func WriteStatusesFenced(ctx context.Context, pool *pgxpool.Pool, node string, rows []AccountStatus) (FencedResult, error) {
	rows = lastPerKey(rows, func(r AccountStatus) int64 { return r.ID }, cmp.Compare[int64])
	return inBatches(rows, statusChunk, func(batch []AccountStatus) (FencedResult, error) { return writeStatuses(ctx, pool, node, batch) })
}

// writeStatuses fences in the locking CTE alone: a row it returns was owned by node at the
// row's epoch on its latest version (a row changed while the lock waited is checked again)
// and stays locked until the statement commits, so the update joins by id only. The update
// must not filter on node_id again: with the statistics of a moment before a claim (every
// follower free, or a new node's id) PostgreSQL takes node_id = $1 for one row, drives the
// update from trading_accounts_node_idx and joins every owned row with every row of the
// batch: 7.5 million rows looked at for a 500-row write to 5,000 owned accounts, 0.7 s
// (TestFencedWritesStayLinearWhateverTheStatistics).
func writeStatuses(ctx context.Context, pool *pgxpool.Pool, node string, rows []AccountStatus) (FencedResult, error) {
	n := len(rows)
	applied, err := execEncoded(ctx, pool, `
		WITH s AS (
			SELECT * FROM unnest($2::bigint[], $3::bigint[], $4::text[], $5::text[], $6::float8[], $7::float8[], $8::timestamptz[], $9::timestamptz[])
			     AS s(id, epoch, status, last_error, balance, equity, at, last_copy_at)),
		locked AS (
			SELECT s.* FROM trading_accounts t JOIN s ON t.id = s.id AND t.lease_epoch = s.epoch
			WHERE t.node_id = $1
			ORDER BY t.id
			FOR NO KEY UPDATE OF t)
		UPDATE trading_accounts t
		SET status = l.status, last_error = l.last_error, balance = l.balance, equity = l.equity,
		    status_at = l.at, last_copy_at = coalesce(l.last_copy_at, t.last_copy_at)
		FROM locked l
		WHERE t.id = l.id`,
		func(p *pgparams.Params) {
			p.Text(node)
			p.Int8Array(n, func(i int) int64 { return rows[i].ID })
			p.Int8Array(n, func(i int) int64 { return rows[i].Epoch })
			p.TextArray(n, func(i int) string { return rows[i].Status })
			p.TextArray(n, func(i int) string { return rows[i].LastError })
			p.Float8Array(n, func(i int) (float64, bool) { return rows[i].Balance, !rows[i].EquityUnknown })
			p.Float8Array(n, func(i int) (float64, bool) { return rows[i].Equity, !rows[i].EquityUnknown })
			p.TimestamptzArray(n, func(i int) (time.Time, bool) { return rows[i].At, true })
			p.TimestamptzArray(n, func(i int) (time.Time, bool) { return rows[i].LastCopyAt, !rows[i].LastCopyAt.IsZero() })
		})
	if err != nil {
		return FencedResult{}, fmt.Errorf("store: write statuses: %w", err)
	}
	return FencedResult{Applied: applied, Refused: int64(n) - applied}, nil
}

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
