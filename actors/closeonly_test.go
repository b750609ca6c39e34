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
		c.awaitConfigApplied(fmt.Sprintf("close_only %q applied", mode), f, mark)
	}
	copies := func() []int64 { return c.copiesOf(f, link.Magic) }
	want := func(what string, tickets ...int64) { t.Helper(); c.awaitCopies(what, f, link.Magic, tickets...) }

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

// copiesOf lists the master tickets follower f holds copies of under magic, sorted.
func (c *cluster) copiesOf(f, magic int64) []int64 {
	c.t.Helper()
	ps, err := c.sim.AccountPositions(context.Background(), fmt.Sprintf("f%d", f))
	must(c.t, err)
	var out []int64
	for _, p := range ps {
		if mt, ok := reconcile.ParseMarker(p.Comment); ok && p.Magic == magic {
			out = append(out, mt)
		}
	}
	slices.Sort(out)
	return out
}

// awaitCopies waits until follower f holds copies of exactly tickets under magic.
func (c *cluster) awaitCopies(what string, f, magic int64, tickets ...int64) {
	c.t.Helper()
	slices.Sort(tickets)
	c.eventually(what, 30*time.Second, func() (bool, string) {
		got := c.copiesOf(f, magic)
		return slices.Equal(got, tickets), fmt.Sprintf("copies of %v, want %v", got, tickets)
	})
}

// awaitConfigApplied waits until follower f's owner has loaded its configuration as it is
// in the database now (changed after mark) and finished the reconcile that the change
// starts, with nothing further running or due: what the change did is then final.
func (c *cluster) awaitConfigApplied(what string, f int64, mark int) {
	c.t.Helper()
	cfg, err := store.LoadFollowerConfig(context.Background(), c.db.Pool, f)
	must(c.t, err)
	c.awaitSignals(what, mark, func(sigs []actors.Signal) (bool, string) {
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

// TestFollowerCloseOnly: the follower's own close-only mode holds on every link: set to
// close_now it closes the copies of both of its links; lifted, none is copied again, and
// new master positions are. The node writes its ticket map rarely, so every reload comes
// before the rows it reads: the reloads must keep the actor's own map.
func TestFollowerCloseOnly(t *testing.T) {
	c := newCluster(t, 2, 1) // the follower is linked to master 2 (magic 7002)
	ctx := context.Background()
	f := c.followers[0]
	settings, err := json.Marshal(reconcile.DefaultSettings())
	must(t, err)
	_, err = store.CreateLink(ctx, c.db.Pool, store.Link{MasterID: 1, FollowerID: f, Enabled: true, Magic: 7001, Settings: settings})
	must(t, err)
	mark := c.signals.Len()
	c.startWith("n1", 10, nil, func(cfg *actors.Config) { cfg.FlushEvery = time.Hour })
	c.awaitIdle("follower idle", mark, []int64{f})
	positions := func() int {
		ps, err := c.sim.AccountPositions(ctx, fmt.Sprintf("f%d", f))
		must(t, err)
		return len(ps)
	}
	setMode := func(mode protect.CloseOnly) {
		t.Helper()
		m := string(mode)
		mark := c.signals.Len()
		must(t, store.UpdateAccount(ctx, c.db.Pool, store.AccountUpdate{ID: f, CloseOnly: &m}))
		c.awaitConfigApplied(fmt.Sprintf("account close_only %q applied", mode), f, mark)
	}
	c.masterOpen(1, "EURUSD", broker.Buy, 0.2, 0, 0)
	c.masterOpen(2, "GBPUSD", broker.Sell, 0.3, 0, 0)
	c.eventually("both links copied", 30*time.Second, func() (bool, string) { return positions() == 2, fmt.Sprint(positions(), " positions") })

	setMode(protect.CloseNow)
	if n := positions(); n != 0 {
		t.Fatalf("close_now on the follower left %d positions", n)
	}
	setMode(protect.CopyNormally)
	if n := positions(); n != 0 {
		t.Fatalf("lifting the follower's close_now copied again: %d positions", n)
	}
	c.masterOpen(1, "USDJPY", broker.Buy, 0.1, 0, 0)
	c.masterOpen(2, "USDJPY", broker.Sell, 0.1, 0, 0)
	c.eventually("new positions copied on both links", 30*time.Second, func() (bool, string) { return positions() == 2, fmt.Sprint(positions(), " positions") })
}
