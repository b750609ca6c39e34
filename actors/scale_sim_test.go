package actors_test

import (
	"cmp"
	"context"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/snapcopier/copier/leasekeeper"
	"github.com/snapcopier/copier/store"
	"github.com/snapcopier/copier/store/storetest"
)

// TestScaleOutProtocol runs the lease protocol of a 1→4 scale-out on the real store with
// no actors: each node's cycle is store.LeaseCycle with leasekeeper.FairShare, followed
// (as the LeaseKeeper does) by a store.HandOff of leasekeeper.HandOffCount of its newest
// accounts. n1 owns everything, n2..n4 join (one cycle each), then the nodes cycle in
// turn, one round = one cycle of every node. It checks that every node reaches its share
// within 3 rounds after the join, each account is handed off at most once, and no
// account is owned twice; it logs master feeds per node (distinct masters of the owned
// followers) against claims in id order (what a claim without the preference takes).
// COPIER_SCALE_FOLLOWERS sets the size (default 200; BENCHMARKS.md uses 2000).
func TestScaleOutProtocol(t *testing.T) {
	t.Parallel()
	followers, masters := 200, 10
	if v, err := strconv.Atoi(os.Getenv("COPIER_SCALE_FOLLOWERS")); err == nil && v > 0 {
		followers, masters = v, v/20
	}
	db := storetest.NewDB(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	_, err := db.Pool.Exec(ctx, `
		INSERT INTO trading_accounts (id, platform, role, login)
		SELECT g, 'sim', CASE WHEN g <= $1::int THEN 'master' ELSE 'follower' END, 'login-' || g FROM generate_series(1, $1::int + $2::int) g
		`, masters, followers)
	must(t, err)
	// Each follower copies one master chosen by a fixed pseudo-random permutation, so that
	// id order says nothing about masters.
	_, err = db.Pool.Exec(ctx, `
		INSERT INTO copy_links (master_id, follower_id, magic)
		SELECT 1 + ((g * 7919) % $1::int), $1::int + g, 1 FROM generate_series(1, $2::int) g`, masters, followers)
	must(t, err)

	c := &cluster{t: t, db: db}
	c.installHandoffAudit()
	nodes := []string{"n1", "n2", "n3", "n4"}
	held := map[string][]store.Held{}
	cycle := func(node string) {
		res, err := store.LeaseCycle(ctx, db.Pool, store.CycleRequest{Node: node, Platform: "sim", Lease: time.Minute,
			Held: held[node], Capacity: followers, Share: func(v store.ClusterView) int { return leasekeeper.FairShare(v, node) }})
		must(t, err)
		held[node] = held[node][:0]
		for _, o := range res.Owned {
			held[node] = append(held[node], store.Held{ID: o.ID, Epoch: o.Epoch})
		}
		if n := leasekeeper.HandOffCount(len(held[node]), res.Share, leasekeeper.DefaultMaxHandOffs); n > 0 {
			// As the LeaseKeeper: whole masters' followers go, by master then id, from the end.
			master := map[int64]int64{}
			for _, o := range res.Owned {
				master[o.ID] = o.Master
			}
			slices.SortStableFunc(held[node], func(a, b store.Held) int { return cmp.Compare(master[a.ID], master[b.ID]) })
			off := held[node][len(held[node])-n:]
			got, err := store.HandOff(ctx, db.Pool, node, off)
			must(t, err)
			if got != int64(n) {
				t.Fatalf("%s handed off %d of %d", node, got, n)
			}
			held[node] = held[node][:len(held[node])-n]
		}
	}
	cycle("n1")
	feedsBefore := feeds(t, db, `SELECT avg(n)::float8 FROM (SELECT count(DISTINCT l.master_id) AS n FROM trading_accounts t
		JOIN copy_links l ON l.follower_id = t.id WHERE t.node_id IS NOT NULL GROUP BY t.node_id) x`)
	for _, n := range nodes[1:] { // they join: live, nothing free to claim
		cycle(n)
	}
	rounds, balanced, msg := 0, false, ""
	for rounds < 10 && !balanced {
		for _, n := range nodes {
			cycle(n)
		}
		rounds++
		balanced, msg = c.balanced(map[string]int{"n1": followers / 4, "n2": followers / 4, "n3": followers / 4, "n4": followers / 4})()
	}
	if !balanced || rounds > 3 {
		t.Fatalf("after %d rounds: %s (target: balanced within 3)", rounds, msg)
	}
	if o := c.auditOverlaps(); len(o) > 0 {
		t.Fatalf("accounts owned twice:\n%v", o)
	}
	handedOff, twice := 0, 0
	for _, n := range c.auditHandOffs() {
		handedOff += n
		if n > 1 {
			twice++
		}
	}
	if twice > 0 {
		t.Fatalf("%d accounts handed off more than once", twice)
	}
	after := feeds(t, db, `SELECT avg(n)::float8 FROM (SELECT count(DISTINCT l.master_id) AS n FROM trading_accounts t
		JOIN copy_links l ON l.follower_id = t.id WHERE t.node_id IS NOT NULL GROUP BY t.node_id) x`)
	idOrder := feeds(t, db, `SELECT avg(n)::float8 FROM (SELECT count(DISTINCT master_id) AS n FROM
		(SELECT master_id, ntile(4) OVER (ORDER BY follower_id) AS b FROM copy_links) x GROUP BY b) y`)
	if after >= idOrder {
		t.Fatalf("master feeds per node %.1f, no fewer than claims in id order give (%.1f)", after, idOrder)
	}
	t.Logf("1→4 nodes, %d followers of %d masters: balanced %d rounds (cycles per node) after the join; %d hand-offs (%.2f per account, none twice); master feeds per node: %.1f on one node, %.1f on four (claims in id order: %.1f)",
		followers, masters, rounds, handedOff, float64(handedOff)/float64(followers), feedsBefore, after, idOrder)
}

func feeds(t *testing.T, db *storetest.DB, q string) float64 {
	t.Helper()
	var v float64
	must(t, db.Pool.QueryRow(context.Background(), q).Scan(&v))
	return v
}
