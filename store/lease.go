package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Held is one lease this process holds: the account and the epoch it claimed it with.
// Renewal and release are keyed by these pairs, never by node_id alone, so two processes
// that share a node id, or a restarted process, cannot touch a lease they did not take.
type Held struct {
	ID    int64
	Epoch int64
}

// Owned is an account the cycle confirmed as this process's.
type Owned struct {
	ID            int64
	Epoch         int64
	ConfigVersion int64
	Claimed       bool // newly claimed in this cycle (a takeover or first claim)
}

// CycleRequest is the input of one lease cycle.
type CycleRequest struct {
	Node     string
	Platform string
	Lease    time.Duration // lease_until = now() + Lease by the database's clock
	Held     []Held        // what this process believes it holds
	Capacity int           // the most accounts this process may hold
	NoClaim  bool          // draining: renew and release only
	// SkipClaim, when set, is asked just before the claim: true skips it. A node that
	// begins to shut down while a cycle runs uses it, so that the cycle still commits
	// with a result the node knows (and releases) instead of being cancelled mid-commit,
	// when its claims may be committed without the node ever learning of them.
	SkipClaim func() bool
	// Share, when set, is this node's fair share given the platform's live nodes and
	// followers: the claim stops there (and never exceeds Capacity).
	Share func(ClusterView) int
	// HandOffs, when set with Share, is how many of its renewed leases the node should
	// hand back given what it holds and its share; the cycle then picks them (HandOff).
	HandOffs func(owned, share int) int
}

// CycleResult is what one committed lease cycle established.
type CycleResult struct {
	Owned    []Owned // everything this process owns now, by id
	Released []int64 // switched-off accounts released in this cycle
	Renewed  int
	Claimed  int
	// NextForeignExpiry is how long after the cycle's end (at the latest) the earliest live
	// lease of another process on this platform ends, by the database's clock; zero when
	// there is none, or when this process is at its capacity (its fair share does not
	// matter: an expired lease is claimed whatever the share). A node schedules a claim for
	// that moment, so a crashed node's accounts move one lease after its last renewal
	// instead of at the next interval after that.
	NextForeignExpiry time.Duration
	View              ClusterView // the platform as the cycle saw it (this node with its renewals)
	Share             int         // Share(View); zero without Share
	// HandOff are the renewed leases the node should hand back (HandOffs of them): the
	// followers of the masters with the fewest followers on this node first, whole masters
	// at a time, so that a master's followers gather on few nodes.
	HandOff []Held
}

// ErrBadCycle reports an invalid CycleRequest.
var ErrBadCycle = errors.New("store: invalid lease cycle request")

// LeaseCycle runs one lease cycle in one transaction (docs/design.md §1):
//  1. renew this process's leases by (id, lease_epoch), and release those on accounts
//     that were switched off, in one statement;
//  3. claim free or expired followers of the platform up to the fair share (and free
//     capacity), then expired ones beyond the share up to free capacity, locking the
//     candidates in a CTE with FOR UPDATE SKIP LOCKED and bumping lease_epoch;
//  4. return everything owned, with epoch and config version.
//
// The caller reads its monotonic clock before calling: the transaction begins here, so the
// database's now() (and so every lease_until written) is later than that reading. On error
// nothing changed.
func LeaseCycle(ctx context.Context, pool *pgxpool.Pool, req CycleRequest) (CycleResult, error) {
	if req.Node == "" || req.Platform == "" || req.Lease <= 0 || req.Capacity < 0 {
		return CycleResult{}, fmt.Errorf("%w: node %q, platform %q, lease %v, capacity %d", ErrBadCycle, req.Node, req.Platform, req.Lease, req.Capacity)
	}
	ids, epochs := splitHeld(req.Held)
	var res CycleResult
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		renewed, released, platforms, err := renewOrRelease(ctx, tx, req, ids, epochs)
		if err != nil {
			return err
		}
		if err := notifyReleased(ctx, tx, req.Node, platforms); err != nil {
			return err
		}
		var view ClusterView
		var handOff []Held
		room := req.Capacity - len(renewed)
		free, share := room, 0
		claiming := !req.NoClaim && room > 0
		var scan platformScan
		if req.Share != nil || claiming {
			if scan, err = scanPlatform(ctx, tx, req.Platform, req.Node, claiming); err != nil {
				return err
			}
		}
		if req.Share != nil {
			if view, err = readView(ctx, tx, req, len(renewed), scan.followers); err != nil {
				return err
			}
			share = req.Share(view)
			free = min(free, share-len(renewed))
			if req.HandOffs != nil {
				if n := req.HandOffs(len(renewed), share); n > 0 {
					if handOff, err = pickHandOff(ctx, tx, renewed, n); err != nil {
						return err
					}
				}
			}
		}
		var claimed []Owned
		if claiming && (req.SkipClaim == nil || !req.SkipClaim()) {
			if free > 0 && scan.claimable {
				if claimed, err = claimFollowers(ctx, tx, req, free, false); err != nil {
					return err
				}
			}
			// Expired leases are claimed whatever the share: a crashed node still counts
			// as live until its last cycle is a lease old, so in a balanced cluster every
			// node sits at its share and its accounts would wait that long, plus an
			// interval. The surplus is handed back later, once the shares have grown.
			// (A first claim that took fewer than it asked for took every claimable row.)
			if rest := room - len(claimed); rest > 0 && req.Share != nil && scan.expired && (free <= 0 || len(claimed) == free) {
				expired, err := claimFollowers(ctx, tx, req, rest, true)
				if err != nil {
					return err
				}
				claimed = append(claimed, expired...)
			}
		}
		res = CycleResult{Released: released, Renewed: len(renewed), Claimed: len(claimed), View: view, Share: share, HandOff: handOff}
		res.Owned = mergeOwned(renewed, claimed)
		// Learned with room under the capacity whatever the share, for the same reason.
		if len(res.Owned) < req.Capacity && !req.NoClaim {
			res.NextForeignExpiry = scan.foreignExpiry
		}
		return recordNode(ctx, tx, req, len(res.Owned), share)
	})
	if err != nil {
		return CycleResult{}, fmt.Errorf("store: lease cycle: %w", err)
	}
	return res, nil
}

func splitHeld(held []Held) (ids, epochs []int64) {
	ids = make([]int64, len(held))
	epochs = make([]int64, len(held))
	for i, h := range held {
		ids[i], epochs[i] = h.ID, h.Epoch
	}
	return ids, epochs
}

// renewOrRelease takes every held row in one statement, locked in ascending id order
// (like every statement that locks several trading_accounts rows, so that two never
// deadlock: the renewal once deadlocked with a node's own batched ticket-map writes), and
// renews the ones still to be copied while releasing the ones switched off (disabled, no
// longer followers, or moved to another platform). One statement, because READ COMMITTED
// gives each statement its own snapshot: a release and a renewal in two statements dropped
// an account switched off between them, neither renewed nor released, its row still naming
// this process. The row lock makes the switch wait for, or go before, the whole decision.
func renewOrRelease(ctx context.Context, tx pgx.Tx, req CycleRequest, ids, epochs []int64) (renewed []Owned, released []int64, platforms []string, err error) {
	if len(ids) == 0 {
		return nil, nil, nil, nil
	}
	rows, err := tx.Query(ctx, `
		WITH locked AS (
			SELECT t.id, (t.enabled AND t.role = 'follower' AND t.platform = $5) AS keep
			FROM trading_accounts t
			JOIN unnest($2::bigint[], $3::bigint[]) AS s(id, epoch) ON t.id = s.id AND t.lease_epoch = s.epoch
			WHERE t.node_id = $1
			ORDER BY t.id
			FOR NO KEY UPDATE OF t)
		UPDATE trading_accounts t
		SET node_id = CASE WHEN l.keep THEN t.node_id END,
		    lease_until = CASE WHEN l.keep THEN now() + make_interval(secs => $4) END
		FROM locked l WHERE t.id = l.id
		RETURNING t.id, t.lease_epoch, t.config_version, l.keep, t.platform`, req.Node, ids, epochs, req.Lease.Seconds(), req.Platform)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("renew: %w", err)
	}
	var o Owned
	var keep bool
	var platform string
	_, err = pgx.ForEachRow(rows, []any{&o.ID, &o.Epoch, &o.ConfigVersion, &keep, &platform}, func() error {
		if keep {
			renewed = append(renewed, o)
		} else {
			released = append(released, o.ID)
			platforms = append(platforms, platform)
		}
		return nil
	})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("renew: %w", err)
	}
	slices.Sort(released)
	return renewed, released, platforms, nil
}

// platformScan is what a lease cycle needs to know of its platform's enabled followers,
// read in one pass after the renewal: their number (the fair share), whether any can be
// claimed, and when the earliest live lease of another node ends. Three queries read
// them before, each a full pass (a claim check finds nothing only after reading every
// row): at 20,000 followers about 7 to 10 ms of the database each, every cycle of every
// node.
type platformScan struct {
	followers int
	claimable bool // some follower is free or its lease ran out
	expired   bool // ... a lease that ran out (not a free row): claimed beyond the share
	// foreignExpiry is how long until the earliest live lease of another node on the
	// platform ends, measured from clock_timestamp() during the scan: that moment comes
	// before the cycle's result reaches the node, so a claim scheduled this long after
	// the result arrives never runs before the lease has ended (read before the claims,
	// it overstates the wait by their time: a claim a few milliseconds late, never
	// early). Zero when there is none. (Another process sharing this node id is not
	// watched: its accounts move at the interval's pace.) A lease that ended while the
	// cycle ran gives the shortest wait, not none.
	foreignExpiry time.Duration
}

// scanPlatform reads the platform's followers; without claiming only their number,
// which the claim index alone answers (the claim's columns need every row).
func scanPlatform(ctx context.Context, tx pgx.Tx, platform, node string, claiming bool) (platformScan, error) {
	var s platformScan
	if !claiming {
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM trading_accounts WHERE platform = $1 AND role = 'follower' AND enabled`,
			platform).Scan(&s.followers); err != nil {
			return s, fmt.Errorf("count followers: %w", err)
		}
		return s, nil
	}
	var secs *float64
	err := tx.QueryRow(ctx, `
		SELECT count(*), coalesce(bool_or(claimable), false), coalesce(bool_or(claimable AND node_id IS NOT NULL), false),
		       extract(epoch FROM min(lease_until) FILTER (WHERE NOT claimable AND node_id <> $2) - clock_timestamp())::float8
		FROM (SELECT node_id, lease_until, (node_id IS NULL OR lease_until IS NULL OR lease_until < now()) AS claimable
		      FROM trading_accounts
		      WHERE platform = $1 AND role = 'follower' AND enabled) f`, platform, node).Scan(&s.followers, &s.claimable, &s.expired, &secs)
	if err != nil {
		return s, fmt.Errorf("scan followers: %w", err)
	}
	if secs != nil {
		s.foreignExpiry = max(time.Duration(*secs*float64(time.Second)), time.Millisecond)
	}
	return s, nil
}

// claimSQL claims up to $4 free (or, with $5, only expired) followers of platform $3 for
// node $1 with a lease of $2 seconds: those of masters the node already follows first,
// then grouped by master, locked with SKIP LOCKED.
//
// It orders by min(master_id + 0), not min(master_id): PostgreSQL turns a bare min into
// "ORDER BY master_id LIMIT 1" over the (master_id, follower_id) index, which reads that
// whole index for each candidate when the tables have no statistics yet (freshly loaded
// accounts: 10,000 candidates took 550 ms instead of 94 ms;
// TestClaimPlanNeedsNoStatistics).
const claimSQL = `
		WITH followed AS (
			SELECT DISTINCT l.master_id FROM copy_links l
			JOIN trading_accounts f ON f.id = l.follower_id
			WHERE f.node_id = $1 AND l.enabled),
		candidates AS (
			SELECT id FROM trading_accounts
			WHERE platform = $3 AND role = 'follower' AND enabled
			  AND (node_id IS NULL OR lease_until IS NULL OR lease_until < now())
			  AND (NOT $5 OR node_id IS NOT NULL)
			ORDER BY NOT EXISTS (SELECT 1 FROM copy_links l JOIN followed m ON m.master_id = l.master_id
				WHERE l.follower_id = trading_accounts.id AND l.enabled),
				(SELECT min(l.master_id + 0) FROM copy_links l WHERE l.follower_id = trading_accounts.id AND l.enabled), id
			LIMIT $4
			FOR UPDATE SKIP LOCKED)
		UPDATE trading_accounts t
		SET node_id = $1, lease_until = now() + make_interval(secs => $2), lease_epoch = t.lease_epoch + 1
		FROM candidates c WHERE t.id = c.id
		RETURNING t.id, t.lease_epoch, t.config_version`

// claimFollowers locks up to limit free or expired followers in a CTE (which PostgreSQL
// runs exactly once; an IN-subquery may be re-run and update more than limit rows) and
// takes them with a new epoch. Followers of masters the node already follows come first,
// so that a master's followers gather on few nodes (fewer master feeds per node).
//
// With expiredOnly it takes only leases that another process held and let expire (not
// free rows): those are claimed beyond the fair share.
//
// The caller runs it only when the cycle's platformScan found a claimable follower: a node
// below its share would run it every cycle, and ordering the candidates (the followed
// masters, each candidate's master) cost about a second of a loaded database even when
// no follower was free (20,000 followers, 4 nodes, 1 s interval).
func claimFollowers(ctx context.Context, tx pgx.Tx, req CycleRequest, limit int, expiredOnly bool) ([]Owned, error) {
	rows, err := tx.Query(ctx, claimSQL, req.Node, req.Lease.Seconds(), req.Platform, limit, expiredOnly)
	if err != nil {
		return nil, fmt.Errorf("claim: %w", err)
	}
	return pgx.CollectRows(rows, scanOwned(true))
}

// pickHandOff chooses n of the renewed leases to hand back: the followers of the masters
// with the fewest followers among them first (whole masters at a time, then by master id),
// highest follower ids first within a master.
func pickHandOff(ctx context.Context, tx pgx.Tx, renewed []Owned, n int) ([]Held, error) {
	ids, epochs := make([]int64, len(renewed)), make([]int64, len(renewed))
	for i, o := range renewed {
		ids[i], epochs[i] = o.ID, o.Epoch
	}
	rows, err := tx.Query(ctx, `
		WITH mine AS (SELECT * FROM unnest($1::bigint[], $2::bigint[]) AS m(id, epoch)),
		fm AS (SELECT m.id, m.epoch, coalesce(min(l.master_id), 0) AS master
			FROM mine m LEFT JOIN copy_links l ON l.follower_id = m.id AND l.enabled GROUP BY m.id, m.epoch),
		sizes AS (SELECT master, count(*) AS n FROM fm GROUP BY master)
		SELECT fm.id, fm.epoch FROM fm JOIN sizes s ON s.master = fm.master
		ORDER BY s.n, fm.master, fm.id DESC LIMIT $3`, ids, epochs, n)
	if err != nil {
		return nil, fmt.Errorf("pick hand-offs: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Held, error) {
		var h Held
		err := row.Scan(&h.ID, &h.Epoch)
		return h, err
	})
	if err != nil {
		return nil, fmt.Errorf("pick hand-offs: %w", err)
	}
	return out, nil
}

func scanOwned(claimed bool) pgx.RowToFunc[Owned] {
	return func(row pgx.CollectableRow) (Owned, error) {
		o := Owned{Claimed: claimed}
		err := row.Scan(&o.ID, &o.Epoch, &o.ConfigVersion)
		return o, err
	}
}

func mergeOwned(renewed, claimed []Owned) []Owned {
	out := make([]Owned, 0, len(renewed)+len(claimed))
	out = append(out, renewed...)
	out = append(out, claimed...)
	slices.SortFunc(out, func(a, b Owned) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// ReleaseAll gives back every lease this process holds (clean shutdown, drain), forgets
// the node (the others' shares grow at once) and notifies ReleaseChannel in the same
// transaction, so the other nodes claim them at once. It returns how many rows it
// released. Like every other multi-row statement it locks the rows in id order, so it
// cannot deadlock with a batched fenced write still in flight.
func ReleaseAll(ctx context.Context, pool *pgxpool.Pool, node string, held []Held) (int64, error) {
	n, err := release(ctx, pool, node, held, true)
	if err != nil {
		return 0, fmt.Errorf("store: release all: %w", err)
	}
	return n, nil
}

// HandOff gives back some leases of a node that stays (it holds more than its fair
// share), counts them as its hand-offs and notifies ReleaseChannel, in one transaction.
// Like every release it names (id, epoch) pairs: a lease claimed again since is untouched.
func HandOff(ctx context.Context, pool *pgxpool.Pool, node string, held []Held) (int64, error) {
	n, err := release(ctx, pool, node, held, false)
	if err != nil {
		return 0, fmt.Errorf("store: hand off: %w", err)
	}
	return n, nil
}

func release(ctx context.Context, pool *pgxpool.Pool, node string, held []Held, leaving bool) (int64, error) {
	if len(held) == 0 && !leaving {
		return 0, nil
	}
	ids, epochs := splitHeld(held)
	var n int64
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `
		WITH locked AS (
			SELECT t.id FROM trading_accounts t
			JOIN unnest($2::bigint[], $3::bigint[]) AS s(id, epoch) ON t.id = s.id AND t.lease_epoch = s.epoch
			WHERE t.node_id = $1
			ORDER BY t.id
			FOR NO KEY UPDATE OF t)
		UPDATE trading_accounts t SET node_id = NULL, lease_until = NULL
		FROM locked WHERE t.id = locked.id
		RETURNING t.platform`, node, ids, epochs)
		if err != nil {
			return err
		}
		platforms, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		n = int64(len(platforms))
		if leaving {
			if err := forgetNode(ctx, tx, node); err != nil {
				return err
			}
		} else if _, err := tx.Exec(ctx, `UPDATE copier_nodes SET handoffs = handoffs + $2 WHERE node_id = $1`, node, n); err != nil {
			return fmt.Errorf("count hand-offs: %w", err)
		}
		return notifyReleased(ctx, tx, node, platforms)
	})
	return n, err
}
