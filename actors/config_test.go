package actors_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/reconcile"
	"github.com/snapcopier/copier/store"
)

// TestConfigChanges: a link added to a running follower starts copying; an edited link's
// settings apply; a disabled link stops copying; a switched-off account is released.
func TestConfigChanges(t *testing.T) {
	c := newCluster(t, 2, 4) // followers alternate between masters 2 and 1
	ctx := context.Background()
	n := c.start("n1", 100, nil)
	c.eventually("owned", 30*time.Second, c.allOwned())
	f := c.followers[0] // linked to master 2
	settings, _ := json.Marshal(reconcile.DefaultSettings())
	link, err := store.CreateLink(ctx, c.db.Pool, store.Link{MasterID: 1, FollowerID: f, Enabled: true, Magic: 9001, Settings: settings})
	must(t, err)
	fLogin := fmt.Sprintf("f%d", f)
	copiesOf := func(magic int64) (n int, vol float64) {
		ps, err := c.sim.AccountPositions(ctx, fLogin)
		must(t, err)
		for _, p := range ps {
			if p.Magic == magic {
				n++
				vol += p.Volume
			}
		}
		return n, vol
	}
	// The new link is picked up within a cycle or two; then a master-1 trade is copied
	// with the new link's magic.
	c.eventually("new link loaded", 10*time.Second, func() (bool, string) {
		for _, a := range n.Snapshot().Accounts {
			if a.ID == f && a.Reconciles >= 2 {
				return true, ""
			}
		}
		return false, "not reloaded"
	})
	c.masterOpen(1, "EURUSD", broker.Buy, 0.5, 0, 0)
	c.eventually("copied through the new link", 10*time.Second, func() (bool, string) {
		k, _ := copiesOf(9001)
		return k == 1, fmt.Sprint(k, " copies")
	})
	// Edit: multiplier 2 applies to the next copy.
	s2 := reconcile.DefaultSettings()
	s2.Sizing.Multiplier = 2
	b2, _ := json.Marshal(s2)
	reloads := n.Metrics().ReconcilesConfig.Load()
	must(t, store.UpdateLink(ctx, c.db.Pool, store.Link{ID: link, Enabled: true, Magic: 9001, Settings: b2}))
	c.eventually("edit reloaded", 10*time.Second, func() (bool, string) {
		return n.Metrics().ReconcilesConfig.Load() > reloads, "not yet"
	})
	c.masterOpen(1, "GBPUSD", broker.Sell, 0.3, 0, 0)
	c.eventually("edited sizing applied", 10*time.Second, func() (bool, string) {
		k, vol := copiesOf(9001)
		return k == 2 && vol > 0.5+0.6-1e-9 && vol < 0.5+0.6+1e-9, fmt.Sprint(k, " copies, ", vol, " lots")
	})
	// Disable the link: the next master-1 trade is not copied to f.
	reloads = n.Metrics().ReconcilesConfig.Load()
	must(t, store.UpdateLink(ctx, c.db.Pool, store.Link{ID: link, Enabled: false, Magic: 9001, Settings: b2}))
	c.eventually("disable reloaded", 10*time.Second, func() (bool, string) {
		return n.Metrics().ReconcilesConfig.Load() > reloads, "not yet"
	})
	c.masterOpen(1, "USDJPY", broker.Buy, 0.1, 0, 0)
	other := c.followers[1] // still linked to master 1: proves the trade was copied elsewhere
	c.eventually("other follower copied", 10*time.Second, func() (bool, string) {
		ps, err := c.sim.AccountPositions(ctx, fmt.Sprintf("f%d", other))
		must(t, err)
		return len(ps) == 3, fmt.Sprint(len(ps), " positions")
	})
	if k, _ := copiesOf(9001); k != 2 {
		t.Fatalf("disabled link still copies: %d copies", k)
	}
	// Switch the account off: its owner releases it in the next cycle.
	must(t, store.SetAccountEnabled(ctx, c.db.Pool, f, false))
	c.eventually("released", 10*time.Second, func() (bool, string) {
		r := c.owners()[f]
		return r.NodeID == "", "owner " + r.NodeID
	})
}
