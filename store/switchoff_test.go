package store_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/snapcopier/copier/store"
	"github.com/snapcopier/copier/store/storetest"
)

// TestSwitchOffDuringCycleIsReleasedNotDropped: an account switched off while a lease
// cycle runs is either renewed (the switch came after) or released (it came before), never
// dropped from the process's holdings while its row still names the process. A cycle that
// released by one statement and renewed by another dropped it when the switch committed
// between the two (READ COMMITTED gives each statement its own snapshot): the row kept
// the node's name, nobody released it, and it showed as owned by a node that had let go.
func TestSwitchOffDuringCycleIsReleasedNotDropped(t *testing.T) {
	t.Parallel()
	db := storetest.NewDB(t)
	const n = 40
	seedAccounts(t, db.Pool, "mt5", "follower", 1, n)
	ctx, cancel := context.WithCancel(ctxT(t))
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // flips the accounts on and off, one by one, as fast as the database allows
		defer wg.Done()
		for i := 0; ctx.Err() == nil; i++ {
			_ = store.SetAccountEnabled(ctx, db.Pool, int64(i%n+1), i/n%2 == 1)
		}
	}()
	defer func() { cancel(); wg.Wait() }()

	var held []store.Held
	for i := 0; i < 300; i++ {
		res := cycle(t, db.Pool, "n1", held, n)
		kept := map[int64]bool{}
		for _, o := range res.Owned {
			kept[o.ID] = true
		}
		for _, id := range res.Released {
			kept[id] = true
		}
		var dropped []int64
		for _, h := range held {
			if kept[h.ID] {
				continue
			}
			var still bool
			if err := db.Pool.QueryRow(ctxT(t), `SELECT node_id IS NOT DISTINCT FROM 'n1' AND lease_epoch = $2 FROM trading_accounts WHERE id = $1`, h.ID, h.Epoch).Scan(&still); err != nil {
				t.Fatal(err)
			}
			if still {
				dropped = append(dropped, h.ID)
			}
		}
		if len(dropped) > 0 {
			t.Fatalf("cycle %d dropped %v: neither renewed nor released, rows still held by n1", i, dropped)
		}
		held = heldOf(res.Owned)
	}
}

// TestSkipClaimCommitsWithoutClaiming: a cycle told to skip its claim (its node began to
// shut down while it ran) still renews and commits, and claims nothing.
func TestSkipClaimCommitsWithoutClaiming(t *testing.T) {
	t.Parallel()
	db := storetest.NewDB(t)
	seedAccounts(t, db.Pool, "mt5", "follower", 1, 6)
	first, err := store.LeaseCycle(ctxT(t), db.Pool, store.CycleRequest{Node: "n1", Platform: "mt5", Lease: time.Minute, Capacity: 3})
	if err != nil || len(first.Owned) != 3 {
		t.Fatalf("first cycle: %d owned, %v", len(first.Owned), err)
	}
	res, err := store.LeaseCycle(ctxT(t), db.Pool, store.CycleRequest{Node: "n1", Platform: "mt5", Lease: time.Minute,
		Held: heldOf(first.Owned), Capacity: 6, SkipClaim: func() bool { return true }})
	if err != nil {
		t.Fatal(err)
	}
	if res.Renewed != 3 || res.Claimed != 0 || len(res.Owned) != 3 {
		t.Fatalf("renewed %d, claimed %d, owned %d; want 3, 0, 3", res.Renewed, res.Claimed, len(res.Owned))
	}
}
