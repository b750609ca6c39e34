package actors_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/snapcopier/copier/actors"
	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/reconcile"
	"github.com/snapcopier/copier/reconcile/protect"
	"github.com/snapcopier/copier/store"
)

// TestCloseOnlyMode: a link's close-only mode set from the database reaches the running
// owner. let_close copies nothing new but follows the master's close; lifted, the held-back
// position is copied; close_now closes the copies, and lifting it does not copy them again;
// a master position opened afterwards is copied as usual.
func TestCloseOnlyMode(t *testing.T) {
	c := newCluster(t, 1, 1)
	ctx := context.Background()
	f := c.followers[0]
	mark := c.signals.Len()
	c.start("n1", 10, nil)
	c.awaitIdle("follower idle", mark, []int64{f})
	cfg, err := store.LoadFollowerConfig(ctx, c.db.Pool, f)
	must(t, err)
	link := cfg.Links[0]

	// setMode writes the link's close-only mode and waits until the owner has loaded it and
	// finished the reconcile the change starts, so that what it did is final.
	setMode := func(mode protect.CloseOnly) {
		t.Helper()
		s := reconcile.DefaultSettings()
		s.Window.MaxAgeSeconds = 0 // late copies of any age: the test must not race the window
		s.Protect.CloseOnly = mode
		b, err := json.Marshal(s)
		must(t, err)
		mark := c.signals.Len()
		must(t, store.UpdateLink(ctx, c.db.Pool, store.Link{ID: link.ID, Enabled: true, Magic: link.Magic, Settings: b}))
		cfg, err := store.LoadFollowerConfig(ctx, c.db.Pool, f)
		must(t, err)
		c.awaitSignals(fmt.Sprintf("close_only %q applied", mode), mark, func(sigs []actors.Signal) (bool, string) {
			loaded, idle := false, false
			for _, s := range sigs {
				switch {
				case s.Account != f:
				case s.Kind == actors.SignalLoaded && s.ConfigVersion >= cfg.ConfigVersion:
					loaded, idle = true, false
				case s.Kind == actors.SignalReconcileStarted:
					idle = false
				case s.Kind == actors.SignalReconcileDone && loaded:
					idle = s.Idle
				}
			}
			return loaded && idle, fmt.Sprintf("loaded %v, idle %v", loaded, idle)
		})
	}
	// copies lists the master tickets f holds copies of.
	copies := func() []int64 {
		ps, err := c.sim.AccountPositions(ctx, fmt.Sprintf("f%d", f))
		must(t, err)
		var out []int64
		for _, p := range ps {
			if mt, ok := reconcile.ParseMarker(p.Comment); ok && p.Magic == link.Magic {
				out = append(out, mt)
			}
		}
		slices.Sort(out)
		return out
	}
	want := func(what string, tickets ...int64) {
		t.Helper()
		c.eventually(what, 30*time.Second, func() (bool, string) {
			got := copies()
			return slices.Equal(got, tickets), fmt.Sprintf("copies of %v, want %v", got, tickets)
		})
	}

	a := c.masterOpen(1, "EURUSD", broker.Buy, 0.5, 0, 0)
	want("copied", a.Ticket)

	setMode(protect.LetClose)
	b := c.masterOpen(1, "GBPUSD", broker.Sell, 0.3, 0, 0)
	setMode(protect.LetClose) // a reconcile that has seen b
	if got := copies(); !slices.Equal(got, []int64{a.Ticket}) {
		t.Fatalf("let_close copied something new: copies of %v", got)
	}
	must(t, c.sim.MasterClose(ctx, "m1", a.Ticket, 0))
	want("the master's close followed under let_close")

	setMode(protect.CopyNormally)
	want("the held-back position copied once lifted", b.Ticket)

	setMode(protect.CloseNow)
	if got := copies(); len(got) != 0 {
		t.Fatalf("close_now left copies of %v", got)
	}
	setMode(protect.CopyNormally)
	if got := copies(); len(got) != 0 {
		t.Fatalf("lifting close_now copied again: copies of %v", got)
	}
	d := c.masterOpen(1, "USDJPY", broker.Buy, 0.1, 0, 0)
	want("a new master position copied", d.Ticket)
	if dups := c.duplicateOpens(); len(dups) > 0 {
		t.Fatalf("duplicate copies opened: %v", dups)
	}
}
