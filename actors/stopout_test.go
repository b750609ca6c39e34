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

// TestDrawdownStopOut: a master's losing position drives its follower past the follower's
// 5 % drawdown limit. The owner stops it out: the copy is closed through the gated order
// path, the stop-out is written through the fence, and nothing new is copied. Another node
// that takes the account over keeps it stopped (it copies nothing, even in its first
// reconcile); an operator's reset resumes copying, without copying the closed copy again.
func TestDrawdownStopOut(t *testing.T) {
	c := newCluster(t, 1, 1)
	ctx := context.Background()
	f := c.followers[0]
	limits, err := json.Marshal(protect.Limits{Drawdown: &protect.Drawdown{Percent: 5}})
	must(t, err)
	must(t, store.SetAccountProtection(ctx, c.db.Pool, f, limits))
	cfg, err := store.LoadFollowerConfig(ctx, c.db.Pool, f)
	must(t, err)
	link := cfg.Links[0]
	magic := link.Magic
	// Late copies of any age: what the reset copies must not depend on how long the test ran.
	settings := reconcile.DefaultSettings()
	settings.Window.MaxAgeSeconds = 0
	doc, err := json.Marshal(settings)
	must(t, err)
	must(t, store.UpdateLink(ctx, c.db.Pool, store.Link{ID: link.ID, Enabled: true, Magic: magic, Settings: doc}))
	fast := func(cfg *actors.Config) { cfg.EquityEvery = 50 * time.Millisecond }

	mark := c.signals.Len()
	c.startWith("n1", 10, nil, fast)
	c.awaitIdle("follower idle", mark, []int64{f})
	copies := func() []int64 { return c.copiesOf(f, magic) }
	want := func(what string, tickets ...int64) { t.Helper(); c.awaitCopies(what, f, magic, tickets...) }

	a := c.masterOpen(1, "EURUSD", broker.Buy, 5, 0, 0)
	want("copied", a.Ticket)
	stopMark := c.signals.Len()
	// 150 pips against 5 lots: a 7,500 USD loss, 7.5 % of the follower's 100,000.
	c.sim.SetPrice("EURUSD", a.OpenPrice-0.0150)
	c.awaitSignals("stop-out", stopMark, func(sigs []actors.Signal) (bool, string) {
		for _, s := range sigs {
			if s.Kind == actors.SignalStopOut && s.Account == f && s.Cause == string(protect.ReasonDrawdown) && s.Link == 0 {
				return true, ""
			}
		}
		return false, "no stop-out signal"
	})
	want("the copy closed by the stop-out")
	stored := func() protect.State {
		t.Helper()
		rows, err := store.ProtectionStates(ctx, c.db.Pool, f)
		must(t, err)
		var st protect.State
		for _, r := range rows {
			if r.LinkID == 0 {
				must(t, json.Unmarshal(r.State, &st))
			}
		}
		return st
	}
	c.eventually("the stop-out written", 30*time.Second, func() (bool, string) {
		st := stored()
		return st.Stop != nil && st.Stop.Reason == protect.ReasonDrawdown, fmt.Sprintf("stored %+v", st)
	})

	// A new owner: n1 stops cleanly, n2 claims the account, loads the stop-out and reconciles
	// with a master position open that was never copied.
	b := c.masterOpen(1, "GBPUSD", broker.Sell, 0.3, 0, 0)
	stopCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	must(t, c.nodes["n1"].Stop(stopCtx))
	mark = c.signals.Len()
	c.startWith("n2", 10, nil, fast)
	c.awaitIdle("the new owner idle", mark, []int64{f})
	if got := copies(); len(got) != 0 {
		t.Fatalf("the new owner of a stopped-out follower copied %v", got)
	}
	if st := stored(); st.Stop == nil {
		t.Fatalf("the new owner lost the stop-out: %+v", st)
	}

	// The operator resets it: copying resumes from the equity at the reset.
	mark = c.signals.Len()
	must(t, store.ResetProtection(ctx, c.db.Pool, f, 0, func(doc []byte, equity float64) ([]byte, error) {
		var st protect.State
		if err := json.Unmarshal(doc, &st); err != nil {
			return nil, err
		}
		st, err := protect.Reset(st, time.Now(), equity)
		if err != nil {
			return nil, err
		}
		return json.Marshal(st)
	}))
	c.awaitConfigApplied("reset applied", f, mark)
	d := c.masterOpen(1, "USDJPY", broker.Buy, 0.1, 0, 0)
	want("copying resumed", b.Ticket, d.Ticket)
	if got := copies(); slices.Contains(got, a.Ticket) {
		t.Fatalf("the copy closed by the stop-out was opened again: %v", got)
	}
	if st := stored(); st.Stop != nil {
		t.Fatalf("stop-out still stored after the reset: %+v", st)
	}
	if dups := c.duplicateOpens(); len(dups) > 0 {
		t.Fatalf("duplicate copies opened: %v", dups)
	}
	// A reset of a follower that is not stopped out changes nothing.
	err = store.ResetProtection(ctx, c.db.Pool, f, 0, func([]byte, float64) ([]byte, error) { return nil, store.ErrNotStoppedOut })
	if err != store.ErrNotStoppedOut {
		t.Fatalf("reset of a running follower: %v", err)
	}
}

// TestBreachFoundByAReconcileStopsItsPlan: the reconcile that first sees a breach planned
// under the old mode (here: a copy of a master position opened while no node ran). Its plan
// must not be carried out: the follower is stopped out before any new copy is opened, and
// the copy it held is closed. Equity is read only by reconciles here, so the breach is
// found by one.
func TestBreachFoundByAReconcileStopsItsPlan(t *testing.T) {
	c := newCluster(t, 1, 1)
	ctx := context.Background()
	f := c.followers[0]
	login := fmt.Sprintf("f%d", f)
	slow := func(cfg *actors.Config) { cfg.EquityEvery = time.Hour }
	settings := reconcile.DefaultSettings()
	settings.Window.MaxAgeSeconds = 0
	doc, err := json.Marshal(settings)
	must(t, err)
	cfg, err := store.LoadFollowerConfig(ctx, c.db.Pool, f)
	must(t, err)
	link := cfg.Links[0]
	must(t, store.UpdateLink(ctx, c.db.Pool, store.Link{ID: link.ID, Enabled: true, Magic: link.Magic, Settings: doc}))

	mark := c.signals.Len()
	c.startWith("n1", 10, nil, slow)
	c.awaitIdle("follower idle", mark, []int64{f})
	a := c.masterOpen(1, "EURUSD", broker.Buy, 5, 0, 0)
	c.eventually("copied", 30*time.Second, func() (bool, string) {
		ps, err := c.sim.AccountPositions(ctx, login)
		must(t, err)
		return len(ps) == 1, fmt.Sprint(len(ps), " positions")
	})
	stopCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	must(t, c.nodes["n1"].Stop(stopCtx))

	// While no node runs: a 5,000 USD limit from the 100,000 start balance, a 7,500 USD
	// loss, and a new master position. (From the high-water mark it would not breach: the
	// first reading is the first high-water mark.)
	limits, err := json.Marshal(protect.Limits{Drawdown: &protect.Drawdown{Amount: 5000, From: protect.FromStartBalance, StartBalance: 100_000}})
	must(t, err)
	must(t, store.SetAccountProtection(ctx, c.db.Pool, f, limits))
	c.sim.SetPrice("EURUSD", a.OpenPrice-0.0150)
	b := c.masterOpen(1, "GBPUSD", broker.Sell, 0.3, 0, 0)

	mark = c.signals.Len()
	c.startWith("n2", 10, nil, slow)
	c.awaitSignals("stop-out", mark, func(sigs []actors.Signal) (bool, string) {
		for _, s := range sigs {
			if s.Kind == actors.SignalStopOut && s.Account == f {
				return true, ""
			}
		}
		return false, "no stop-out"
	})
	c.awaitIdle("the new owner idle", mark, []int64{f})
	ps, err := c.sim.AccountPositions(ctx, login)
	must(t, err)
	if len(ps) != 0 {
		t.Fatalf("positions left after the stop-out: %+v", ps)
	}
	log, err := c.sim.OrderLog(ctx, 0, 0)
	must(t, err)
	for _, e := range log {
		if e.Login == login && e.Op == broker.OpOpen && e.Comment == reconcile.Marker(b.Ticket) {
			t.Fatalf("the plan made before the breach was found opened a copy of %d: %+v", b.Ticket, e)
		}
	}
}

// TestLinkStopOutStopsOnlyItsLink: a link's own limit stops that link only: its copies are
// closed and it copies nothing new, while the follower's other link goes on copying.
func TestLinkStopOutStopsOnlyItsLink(t *testing.T) {
	c := newCluster(t, 2, 1) // the follower is linked to master 2 (magic 7002)
	ctx := context.Background()
	f := c.followers[0]
	login := fmt.Sprintf("f%d", f)
	guarded := reconcile.DefaultSettings()
	guarded.Window.MaxAgeSeconds = 0
	guarded.Protect.Drawdown = &protect.Drawdown{Amount: 5000, From: protect.FromStartBalance, StartBalance: 100_000}
	doc, err := json.Marshal(guarded)
	must(t, err)
	guardedLink, err := store.CreateLink(ctx, c.db.Pool, store.Link{MasterID: 1, FollowerID: f, Enabled: true, Magic: 7001, Settings: doc})
	must(t, err)
	mark := c.signals.Len()
	c.startWith("n1", 10, nil, func(cfg *actors.Config) { cfg.EquityEvery = 50 * time.Millisecond })
	c.awaitIdle("follower idle", mark, []int64{f})
	byMagic := func() map[int64]int {
		ps, err := c.sim.AccountPositions(ctx, login)
		must(t, err)
		out := map[int64]int{}
		for _, p := range ps {
			out[p.Magic]++
		}
		return out
	}
	a := c.masterOpen(1, "EURUSD", broker.Buy, 5, 0, 0)
	c.masterOpen(2, "USDJPY", broker.Buy, 0.1, 0, 0)
	c.eventually("both links copied", 30*time.Second, func() (bool, string) {
		m := byMagic()
		return m[7001] == 1 && m[7002] == 1, fmt.Sprint(m)
	})
	mark = c.signals.Len()
	c.sim.SetPrice("EURUSD", a.OpenPrice-0.0150)
	c.awaitSignals("the link stopped out", mark, func(sigs []actors.Signal) (bool, string) {
		for _, s := range sigs {
			if s.Kind == actors.SignalStopOut && s.Account == f {
				return s.Link == guardedLink, fmt.Sprintf("stop-out of scope %d", s.Link)
			}
		}
		return false, "no stop-out"
	})
	c.eventually("the guarded link's copy closed, the other kept", 30*time.Second, func() (bool, string) {
		m := byMagic()
		return m[7001] == 0 && m[7002] == 1, fmt.Sprint(m)
	})
	c.masterOpen(1, "GBPUSD", broker.Sell, 0.1, 0, 0)
	c.masterOpen(2, "GBPUSD", broker.Sell, 0.1, 0, 0)
	// The other link copies; wait for it, then the guarded link has had the same event.
	c.eventually("the other link copies on", 30*time.Second, func() (bool, string) {
		m := byMagic()
		return m[7002] == 2, fmt.Sprint(m)
	})
	mark = c.signals.Len()
	// A reload and its reconcile, which has seen both opens.
	_, err = c.db.Pool.Exec(ctx, `UPDATE trading_accounts SET config_version = config_version + 1 WHERE id = $1`, f)
	must(t, err)
	c.awaitConfigApplied("a reconcile after both opens", f, mark)
	if m := byMagic(); m[7001] != 0 {
		t.Fatalf("the stopped-out link copied: %v", m)
	}
}
