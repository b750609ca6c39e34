package actors_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/snapcopier/copier/actors"
	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/reconcile"
	"github.com/snapcopier/copier/store"
)

// TestConfigChanges: a link added to a running follower starts copying; an edited link's
// settings apply; a disabled link stops copying; a switched-off account is released.
func TestConfigChanges(t *testing.T) {
	c := newCluster(t, 2, 4) // followers alternate between masters 2 and 1
	ctx := context.Background()
	c.start("n1", 100, nil)
	f := c.followers[0] // linked to master 2
	// loaded waits until f's owner has loaded the configuration as it is in the database
	// now (whether by its first load or by a reload), with the given number of links.
	loaded := func(what string, links int) {
		t.Helper()
		cfg, err := store.LoadFollowerConfig(ctx, c.db.Pool, f)
		must(t, err)
		c.awaitSignals(what, 0, func(sigs []actors.Signal) (bool, string) {
			last := "none"
			for _, s := range sigs {
				if s.Kind == actors.SignalLoaded && s.Account == f {
					if s.ConfigVersion >= cfg.ConfigVersion && s.Links == links {
						return true, ""
					}
					last = fmt.Sprintf("version %d with %d links", s.ConfigVersion, s.Links)
				}
			}
			return false, fmt.Sprintf("want version %d with %d links, last loaded %s", cfg.ConfigVersion, links, last)
		})
	}
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
	// The new link is picked up (by the first load if it came after the link, else by a
	// reload in the next cycle); then a master-1 trade is copied with its magic.
	loaded("new link loaded", 2)
	c.masterOpen(1, "EURUSD", broker.Buy, 0.5, 0, 0)
	c.eventually("copied through the new link", 30*time.Second, func() (bool, string) {
		k, _ := copiesOf(9001)
		return k == 1, fmt.Sprint(k, " copies")
	})
	// Edit: multiplier 2 applies to the next copy.
	s2 := reconcile.DefaultSettings()
	s2.Sizing.Multiplier = 2
	b2, _ := json.Marshal(s2)
	must(t, store.UpdateLink(ctx, c.db.Pool, store.Link{ID: link, Enabled: true, Magic: 9001, Settings: b2}))
	loaded("edit reloaded", 2)
	c.masterOpen(1, "GBPUSD", broker.Sell, 0.3, 0, 0)
	c.eventually("edited sizing applied", 30*time.Second, func() (bool, string) {
		k, vol := copiesOf(9001)
		return k == 2 && vol > 0.5+0.6-1e-9 && vol < 0.5+0.6+1e-9, fmt.Sprint(k, " copies, ", vol, " lots")
	})
	// Disable the link: the next master-1 trade is not copied to f.
	must(t, store.UpdateLink(ctx, c.db.Pool, store.Link{ID: link, Enabled: false, Magic: 9001, Settings: b2}))
	loaded("disable reloaded", 1)
	c.masterOpen(1, "USDJPY", broker.Buy, 0.1, 0, 0)
	other := c.followers[1] // still linked to master 1: proves the trade was copied elsewhere
	c.eventually("other follower copied", 30*time.Second, func() (bool, string) {
		ps, err := c.sim.AccountPositions(ctx, fmt.Sprintf("f%d", other))
		must(t, err)
		return len(ps) == 3, fmt.Sprint(len(ps), " positions")
	})
	if k, _ := copiesOf(9001); k != 2 {
		t.Fatalf("disabled link still copies: %d copies", k)
	}
	// Switch the account off: its owner releases it in the next cycle.
	must(t, store.SetAccountEnabled(ctx, c.db.Pool, f, false))
	c.eventually("released", 30*time.Second, func() (bool, string) {
		r := c.owners()[f]
		return r.NodeID == "", "owner " + r.NodeID
	})
}
