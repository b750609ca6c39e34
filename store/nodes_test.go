package store_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/snapcopier/copier/store"
	"github.com/snapcopier/copier/store/storetest"
)

// TestClaimPrefersFollowersOfFollowedMasters: a node that follows master 1 through one
// follower claims master 1's other followers before lower ids that follow master 2.
func TestClaimPrefersFollowersOfFollowedMasters(t *testing.T) {
	t.Parallel()
	db := storetest.NewDB(t)
	seedAccounts(t, db.Pool, "mt5", "master", 1, 2)
	seedAccounts(t, db.Pool, "mt5", "follower", 10, 6)
	for f, m := range map[int64]int64{10: 1, 11: 2, 12: 2, 13: 2, 14: 1, 15: 1} {
		if _, err := store.CreateLink(ctxT(t), db.Pool, store.Link{MasterID: m, FollowerID: f, Enabled: true, Magic: 7}); err != nil {
			t.Fatal(err)
		}
	}
	a := cycle(t, db.Pool, "a", nil, 1) // takes 10, a follower of master 1
	if len(a.Owned) != 1 || a.Owned[0].ID != 10 {
		t.Fatalf("first claim %+v, want account 10", a.Owned)
	}
	a = cycle(t, db.Pool, "a", heldOf(a.Owned), 3)
	got := []int64{}
	for _, o := range a.Owned {
		got = append(got, o.ID)
	}
	if len(got) != 3 || got[1] != 14 || got[2] != 15 {
		t.Fatalf("owned %v, want [10 14 15]: master 1's followers first", got)
	}
}

// TestHandOffPicksWholeMastersWithTheFewestFollowers: a node over its share hands back
// the followers of its smallest masters first, a whole master at a time.
func TestHandOffPicksWholeMastersWithTheFewestFollowers(t *testing.T) {
	t.Parallel()
	db := storetest.NewDB(t)
	seedAccounts(t, db.Pool, "mt5", "master", 1, 3)
	seedAccounts(t, db.Pool, "mt5", "follower", 10, 9)
	// master 1: 10-13 (4 followers); master 2: 14-15 (2); master 3: 16-18 (3)
	for f, m := range map[int64]int64{10: 1, 11: 1, 12: 1, 13: 1, 14: 2, 15: 2, 16: 3, 17: 3, 18: 3} {
		if _, err := store.CreateLink(ctxT(t), db.Pool, store.Link{MasterID: m, FollowerID: f, Enabled: true, Magic: 7}); err != nil {
			t.Fatal(err)
		}
	}
	a := cycle(t, db.Pool, "a", nil, 9)
	res, err := store.LeaseCycle(ctxT(t), db.Pool, store.CycleRequest{Node: "a", Platform: "mt5", Lease: time.Minute, Held: heldOf(a.Owned), Capacity: 9,
		Share: func(store.ClusterView) int { return 4 }, HandOffs: func(owned, share int) int { return owned - share }})
	if err != nil {
		t.Fatal(err)
	}
	var got []int64
	for _, h := range res.HandOff {
		got = append(got, h.ID)
	}
	if fmt.Sprint(got) != "[15 14 18 17 16]" {
		t.Fatalf("handed off %v, want master 2's [15 14] then master 3's [18 17 16]", got)
	}
}

// TestADrainingNodeTakesNoShare: a node that does not claim (draining, claiming paused)
// offers no capacity, so the other node's share covers every follower.
func TestADrainingNodeTakesNoShare(t *testing.T) {
	t.Parallel()
	db := storetest.NewDB(t)
	seedAccounts(t, db.Pool, "mt5", "follower", 1, 10)
	half := func(v store.ClusterView) int {
		total := 0
		for _, n := range v.Nodes {
			total += n.Capacity
		}
		share := 0
		for _, n := range v.Nodes {
			if n.ID == "b" && total > 0 {
				share = v.Followers * n.Capacity / total
			}
		}
		return share
	}
	if _, err := store.LeaseCycle(ctxT(t), db.Pool, store.CycleRequest{Node: "a", Platform: "mt5", Lease: time.Minute, Capacity: 100, NoClaim: true}); err != nil {
		t.Fatal(err)
	}
	b, err := store.LeaseCycle(ctxT(t), db.Pool, store.CycleRequest{Node: "b", Platform: "mt5", Lease: time.Minute, Capacity: 100, Share: half})
	if err != nil {
		t.Fatal(err)
	}
	if b.Share != 10 || b.Claimed != 10 {
		t.Fatalf("beside a draining node: share %d, claimed %d, view %+v; want all 10", b.Share, b.Claimed, b.View)
	}
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

// TestExpiredLeasesAreClaimedWhateverTheShare: three nodes at their shares of 9 followers;
// c stops renewing (a crash) while its last cycle still counts it as live. a, at its
// share, learns when c's leases end, and claims them once they have expired, beyond its
// share (up to its capacity); free rows it still leaves to the share.
func TestExpiredLeasesAreClaimedWhateverTheShare(t *testing.T) {
	t.Parallel()
	db := storetest.NewDB(t)
	seedAccounts(t, db.Pool, "mt5", "follower", 1, 9)
	third := func(v store.ClusterView) int { return (v.Followers + len(v.Nodes) - 1) / len(v.Nodes) }
	capacity := 3 // until all three have joined
	run := func(node string, held []store.Held) store.CycleResult {
		t.Helper()
		res, err := store.LeaseCycle(ctxT(t), db.Pool, store.CycleRequest{Node: node, Platform: "mt5", Lease: time.Minute, Held: held, Capacity: capacity, Share: third})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	a, b, c := run("a", nil), run("b", nil), run("c", nil)
	if a.Claimed != 3 || b.Claimed != 3 || c.Claimed != 3 {
		t.Fatalf("a, b and c claimed %d, %d, %d: want 3 each", a.Claimed, b.Claimed, c.Claimed)
	}
	capacity = 100
	a = run("a", heldOf(a.Owned))
	if a.Share != 3 || len(a.Owned) != 3 || a.NextForeignExpiry <= 0 {
		t.Fatalf("a at its share: share %d, owns %d, next foreign expiry %v; want it told when the others' leases end", a.Share, len(a.Owned), a.NextForeignExpiry)
	}
	var cIDs []int64
	for _, o := range c.Owned {
		cIDs = append(cIDs, o.ID)
	}
	expire(t, db.Pool, cIDs...) // c crashed: its leases ran out; its last cycle is recent
	a = run("a", heldOf(a.Owned))
	if a.Share != 3 || a.Claimed != 3 || len(a.Owned) != 6 {
		t.Fatalf("a at its share with c's leases expired: share %d, claimed %d, owns %d; want c's 3 claimed", a.Share, a.Claimed, len(a.Owned))
	}
	for _, o := range a.Owned {
		if slices.Contains(cIDs, o.ID) && (!o.Claimed || o.Epoch != 2) {
			t.Fatalf("c's account %d: claimed %v at epoch %d, want a new claim at epoch 2", o.ID, o.Claimed, o.Epoch)
		}
	}
	// A free row is still left to the share.
	if _, err := store.HandOff(ctxT(t), db.Pool, "b", heldOf(b.Owned[:1])); err != nil {
		t.Fatal(err)
	}
	if a = run("a", heldOf(a.Owned)); a.Claimed != 0 {
		t.Fatalf("a over its share claimed %d free rows", a.Claimed)
	}
	// Beside a lease that ran out, the free row is still left: only the expired one is taken.
	lapsed := b.Owned[1].ID
	expire(t, db.Pool, lapsed)
	if a = run("a", heldOf(a.Owned)); a.Claimed != 1 || !slices.ContainsFunc(a.Owned, func(o store.Owned) bool { return o.ID == lapsed && o.Claimed }) {
		t.Fatalf("a over its share with one lease run out and one row free: claimed %d (owns %v); want only account %d", a.Claimed, a.Owned, lapsed)
	}
}
