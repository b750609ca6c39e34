package store_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/snapcopier/copier/store"
	"github.com/snapcopier/copier/store/storetest"
)

// listener runs ListenReleases until the test ends and hands its notifications and state
// changes to the test.
type listener struct {
	released chan store.Released
	up       chan bool
}

func listen(t *testing.T, db *storetest.DB) *listener {
	t.Helper()
	l := &listener{released: make(chan store.Released, 64), up: make(chan bool, 64)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	cfg := db.Pool.Config().ConnConfig.Copy()
	cfg.RuntimeParams["application_name"] = "copier-listen-test"
	go func() {
		defer close(done)
		store.ListenReleases(ctx, cfg, store.ListenOptions{
			OnRelease: func(r store.Released) { l.released <- r },
			OnState:   func(up bool) { l.up <- up },
			Retry:     10 * time.Millisecond,
		})
	}()
	t.Cleanup(func() { cancel(); <-done })
	l.awaitState(t, true)
	return l
}

func (l *listener) awaitState(t *testing.T, want bool) {
	t.Helper()
	select {
	case got := <-l.up:
		if got != want {
			t.Fatalf("listener state %v, want %v", got, want)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("listener never reported state %v", want)
	}
}

func (l *listener) await(t *testing.T, want store.Released) {
	t.Helper()
	select {
	case got := <-l.released:
		if got != want {
			t.Fatalf("notification %+v, want %+v", got, want)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("no notification %+v", want)
	}
}

func (l *listener) none(t *testing.T) {
	t.Helper()
	select {
	case got := <-l.released:
		t.Fatalf("unexpected notification %+v", got)
	default:
	}
}

// TestReleasesNotifyInTheirTransaction: a clean release and a switched-off account's
// release each notify the platform with the releasing node; a renewal notifies nothing,
// nor does a release that matched no row.
func TestReleasesNotifyInTheirTransaction(t *testing.T) {
	t.Parallel()
	db := storetest.NewDB(t)
	seedAccounts(t, db.Pool, "mt5", "follower", 1, 4)
	l := listen(t, db)

	a := cycle(t, db.Pool, "node a", nil, 4)
	a = cycle(t, db.Pool, "node a", heldOf(a.Owned), 4) // a renewal: no notification
	if _, err := db.Pool.Exec(ctxT(t), `UPDATE trading_accounts SET enabled = false WHERE id = 1`); err != nil {
		t.Fatal(err)
	}
	a = cycle(t, db.Pool, "node a", heldOf(a.Owned), 4)
	if len(a.Released) != 1 {
		t.Fatalf("released %v, want [1]", a.Released)
	}
	l.await(t, store.Released{Platform: "mt5", Node: "node a"})
	if n, err := store.ReleaseAll(ctxT(t), db.Pool, "node a", heldOf(a.Owned)); err != nil || n != 3 {
		t.Fatalf("ReleaseAll = %d, %v", n, err)
	}
	l.await(t, store.Released{Platform: "mt5", Node: "node a"})
	if n, err := store.ReleaseAll(ctxT(t), db.Pool, "node a", heldOf(a.Owned)); err != nil || n != 0 {
		t.Fatalf("stale ReleaseAll = %d, %v", n, err)
	}
	// A marker notification proves that nothing was queued before it.
	if _, err := db.Pool.Exec(ctxT(t), `SELECT pg_notify($1, 'marker x')`, store.ReleaseChannel); err != nil {
		t.Fatal(err)
	}
	l.await(t, store.Released{Platform: "marker", Node: "x"})
	l.none(t)
}

// TestListenerReconnects: a listener whose connection is killed reports it, connects
// again and receives the next release.
func TestListenerReconnects(t *testing.T) {
	t.Parallel()
	db := storetest.NewDB(t)
	seedAccounts(t, db.Pool, "mt5", "follower", 1, 1)
	l := listen(t, db)
	if _, err := db.Pool.Exec(ctxT(t), `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE application_name = 'copier-listen-test' AND datname = current_database()`); err != nil {
		t.Fatal(err)
	}
	l.awaitState(t, false)
	l.awaitState(t, true)
	a := cycle(t, db.Pool, "a", nil, 1)
	if _, err := store.ReleaseAll(ctxT(t), db.Pool, "a", heldOf(a.Owned)); err != nil {
		t.Fatal(err)
	}
	l.await(t, store.Released{Platform: "mt5", Node: "a"})
}

// TestNextForeignExpiry: a cycle with room to claim reports when the earliest lease of
// another node ends, by the database's clock; its own leases and a full node's do not count.
func TestNextForeignExpiry(t *testing.T) {
	t.Parallel()
	db := storetest.NewDB(t)
	seedAccounts(t, db.Pool, "mt5", "follower", 1, 4)
	a := cycle(t, db.Pool, "a", nil, 2)
	if a.NextForeignExpiry != 0 {
		t.Fatalf("no foreign lease, yet NextForeignExpiry = %v", a.NextForeignExpiry)
	}
	if _, err := db.Pool.Exec(ctxT(t), `UPDATE trading_accounts SET lease_until = now() + interval '30 seconds' WHERE node_id = 'a'`); err != nil {
		t.Fatal(err)
	}
	b := cycle(t, db.Pool, "b", nil, 4) // claims the two free ones, has room for two more
	if b.Claimed != 2 || b.NextForeignExpiry <= 25*time.Second || b.NextForeignExpiry > 30*time.Second {
		t.Fatalf("b claimed %d, NextForeignExpiry %v; want 2 and just under 30s", b.Claimed, b.NextForeignExpiry)
	}
	if full := cycle(t, db.Pool, "b", heldOf(b.Owned), 2); full.NextForeignExpiry != 0 {
		t.Fatalf("a full node scheduled a claim: %v", full.NextForeignExpiry)
	}
}

// TestReleaseIsFencedByTheEpoch: a release (shutdown, drain, hand-off) names (id, epoch)
// pairs: a process whose lease ran out and was claimed again under the same node id (a
// restart) cannot release the newer claim.
func TestReleaseIsFencedByTheEpoch(t *testing.T) {
	t.Parallel()
	db := storetest.NewDB(t)
	seedAccounts(t, db.Pool, "mt5", "follower", 1, 2)
	old := cycle(t, db.Pool, "a", nil, 2)
	expire(t, db.Pool, 1, 2)
	renewed := cycle(t, db.Pool, "a", nil, 2) // the same node id, a new process: new epochs
	if n, err := store.ReleaseAll(ctxT(t), db.Pool, "a", heldOf(old.Owned)); err != nil || n != 0 {
		t.Fatalf("release with the old epochs = %d, %v; want 0", n, err)
	}
	if res := cycle(t, db.Pool, "a", heldOf(renewed.Owned), 2); res.Renewed != 2 {
		t.Fatalf("the newer claim lost %d leases to a stale release", 2-res.Renewed)
	}
}

// TestClaimPrefersFollowersOfFollowedMasters: a node that follows master 2 (it holds 12)
// claims master 2's other followers first, then the rest by master (master 1's 10), not
// by id (10, 14, 15).
func TestClaimPrefersFollowersOfFollowedMasters(t *testing.T) {
	t.Parallel()
	db := storetest.NewDB(t)
	seedAccounts(t, db.Pool, "mt5", "master", 1, 2)
	seedAccounts(t, db.Pool, "mt5", "follower", 10, 6)
	links(t, db.Pool, map[int64]int64{10: 1, 11: 2, 12: 2, 13: 2, 14: 1, 15: 1})
	_, err := db.Pool.Exec(ctxT(t), `UPDATE trading_accounts SET node_id = 'a', lease_until = now() + interval '1 minute', lease_epoch = 1 WHERE id = 12`)
	if err != nil {
		t.Fatal(err)
	}
	a := cycle(t, db.Pool, "a", []store.Held{{ID: 12, Epoch: 1}}, 4)
	if got := idsOf(a.Owned); !slices.Equal(got, []int64{10, 11, 12, 13}) {
		t.Fatalf("owned %v, want [10 11 12 13]: master 2's followers first, then master 1's lowest", got)
	}
}

// TestClaimGathersFollowersByMaster: a node that follows no master yet claims followers
// grouped by master (11 and 13 of master 1), not in id order (10 and 11).
func TestClaimGathersFollowersByMaster(t *testing.T) {
	t.Parallel()
	db := storetest.NewDB(t)
	seedAccounts(t, db.Pool, "mt5", "master", 1, 2)
	seedAccounts(t, db.Pool, "mt5", "follower", 10, 4)
	links(t, db.Pool, map[int64]int64{10: 2, 11: 1, 12: 2, 13: 1})
	if got := idsOf(cycle(t, db.Pool, "a", nil, 2).Owned); !slices.Equal(got, []int64{11, 13}) {
		t.Fatalf("owned %v, want [11 13]: master 1's followers together", got)
	}
}

func links(t *testing.T, pool *pgxpool.Pool, followerToMaster map[int64]int64) {
	t.Helper()
	for f, m := range followerToMaster {
		if _, err := store.CreateLink(ctxT(t), pool, store.Link{MasterID: m, FollowerID: f, Enabled: true, Magic: 7}); err != nil {
			t.Fatal(err)
		}
	}
}

func idsOf(owned []store.Owned) []int64 {
	ids := make([]int64, len(owned))
	for i, o := range owned {
		ids[i] = o.ID
	}
	slices.Sort(ids)
	return ids
}

// TestCycleRecordsLiveNodesAndShares: every cycle records its node; the view of the next
// cycle holds every live node; a clean release forgets the node.
func TestCycleRecordsLiveNodesAndShares(t *testing.T) {
	t.Parallel()
	db := storetest.NewDB(t)
	seedAccounts(t, db.Pool, "mt5", "follower", 1, 10)
	half := func(v store.ClusterView) int { return (v.Followers + len(v.Nodes) - 1) / len(v.Nodes) }
	run := func(node string, held []store.Held) store.CycleResult {
		res, err := store.LeaseCycle(ctxT(t), db.Pool, store.CycleRequest{Node: node, Platform: "mt5", Lease: time.Minute, Held: held, Capacity: 100, Share: half})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	a := run("a", nil)
	if a.Share != 10 || a.Claimed != 10 || len(a.View.Nodes) != 1 {
		t.Fatalf("alone: share %d, claimed %d, view %+v", a.Share, a.Claimed, a.View)
	}
	b := run("b", nil)
	if b.Share != 5 || b.Claimed != 0 || len(b.View.Nodes) != 2 || b.View.Nodes[0] != (store.NodeLoad{ID: "a", Capacity: 100, Owned: 10}) {
		t.Fatalf("second node: share %d, claimed %d, view %+v", b.Share, b.Claimed, b.View)
	}
	if n, err := store.HandOff(ctxT(t), db.Pool, "a", heldOf(a.Owned[5:])); err != nil || n != 5 {
		t.Fatalf("hand-off = %d, %v", n, err)
	}
	if b = run("b", nil); b.Claimed != 5 {
		t.Fatalf("b claimed %d after the hand-off, want 5", b.Claimed)
	}
	live, err := store.LiveNodes(ctxT(t), db.Pool)
	if err != nil || len(live) != 2 || live[0].HandOffs != 5 || live[1].Owned != 5 {
		t.Fatalf("live nodes %+v, %v", live, err)
	}
	if _, err := store.ReleaseAll(ctxT(t), db.Pool, "a", heldOf(a.Owned[:5])); err != nil {
		t.Fatal(err)
	}
	if live, err = store.LiveNodes(ctxT(t), db.Pool); err != nil || len(live) != 1 || live[0].ID != "b" {
		t.Fatalf("after a's clean stop, live nodes %+v, %v", live, err)
	}
}

// TestHandOffIsFencedByTheEpoch: a hand-off names (id, epoch) pairs; a lease claimed again
// since (by a new process under the same node id) is untouched and no hand-off is counted.
func TestHandOffIsFencedByTheEpoch(t *testing.T) {
	t.Parallel()
	db := storetest.NewDB(t)
	seedAccounts(t, db.Pool, "mt5", "follower", 1, 2)
	old := cycle(t, db.Pool, "a", nil, 2)
	expire(t, db.Pool, 1, 2)
	renewed := cycle(t, db.Pool, "a", nil, 2)
	if n, err := store.HandOff(ctxT(t), db.Pool, "a", heldOf(old.Owned)); err != nil || n != 0 {
		t.Fatalf("hand-off with the old epochs = %d, %v; want 0", n, err)
	}
	if res := cycle(t, db.Pool, "a", heldOf(renewed.Owned), 2); res.Renewed != 2 {
		t.Fatalf("the newer claim lost %d leases to a stale hand-off", 2-res.Renewed)
	}
	if n, err := store.HandOff(ctxT(t), db.Pool, "a", heldOf(renewed.Owned[:1])); err != nil || n != 1 {
		t.Fatalf("hand-off at the held epoch = %d, %v; want 1", n, err)
	}
}

// TestDrainedNodeOffersNoCapacity: a draining node (no claims) is recorded with capacity
// 0, so the others' shares grow to take its accounts.
func TestDrainedNodeOffersNoCapacity(t *testing.T) {
	t.Parallel()
	db := storetest.NewDB(t)
	seedAccounts(t, db.Pool, "mt5", "follower", 1, 4)
	share := func(v store.ClusterView) int { return leasekeeperShare(v, "b") }
	a, err := store.LeaseCycle(ctxT(t), db.Pool, store.CycleRequest{Node: "a", Platform: "mt5", Lease: time.Minute, Capacity: 10, NoClaim: true})
	if err != nil || len(a.Owned) != 0 {
		t.Fatalf("drained cycle %+v, %v", a, err)
	}
	b, err := store.LeaseCycle(ctxT(t), db.Pool, store.CycleRequest{Node: "b", Platform: "mt5", Lease: time.Minute, Capacity: 10, Share: share})
	if err != nil || b.Share != 4 || b.Claimed != 4 {
		t.Fatalf("beside a drained node: share %d, claimed %d, %v; want 4 and 4", b.Share, b.Claimed, err)
	}
}

// leasekeeperShare spreads the followers evenly over the nodes that offer capacity (store
// cannot import leasekeeper.FairShare).
func leasekeeperShare(v store.ClusterView, node string) int {
	var offering int
	for _, n := range v.Nodes {
		if n.Capacity > 0 {
			offering++
		}
	}
	for _, n := range v.Nodes {
		if n.ID == node && n.Capacity > 0 {
			return min(n.Capacity, (v.Followers+offering-1)/offering)
		}
	}
	return 0
}

// TestClaimStopsAtTheShare: a node claims up to its fair share, not its capacity, and
// leaves the rest free for the other live nodes.
func TestClaimStopsAtTheShare(t *testing.T) {
	t.Parallel()
	db := storetest.NewDB(t)
	seedAccounts(t, db.Pool, "mt5", "follower", 1, 10)
	perNode := func(v store.ClusterView) int { return (v.Followers + len(v.Nodes) - 1) / len(v.Nodes) }
	run := func(node string, capacity int) store.CycleResult {
		res, err := store.LeaseCycle(ctxT(t), db.Pool, store.CycleRequest{Node: node, Platform: "mt5", Lease: time.Minute, Capacity: capacity, Share: perNode})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	run("b", 0) // live, claims nothing
	if a := run("a", 100); a.Share != 5 || a.Claimed != 5 {
		t.Fatalf("share %d, claimed %d; want 5 and 5", a.Share, a.Claimed)
	}
}
