package actors_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/snapcopier/copier/actors"
	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/leasekeeper"
	"github.com/snapcopier/copier/reconcile/follower"
)

func TestCrashTakeover(t *testing.T) {
	c := newCluster(t, 1, 60)
	n1 := c.start("n1", 40, nil)
	c.eventually("n1 owns 40", 30*time.Second, func() (bool, string) {
		k := 0
		for _, r := range c.owners() {
			if r.NodeID == "n1" {
				k++
			}
		}
		return k == 40, fmt.Sprint(k)
	})
	c.start("n2", 100, nil)
	c.eventually("all owned", 30*time.Second, c.allOwned())
	c.masterOpen(1, "EURUSD", broker.Buy, 0.5, 0, 0)
	c.eventually("copied", 30*time.Second, c.converged)
	before := c.owners()

	n1.Halt() // a crash: nothing released
	halted := time.Now()
	gap := c.masterOpen(1, "GBPUSD", broker.Sell, 0.2, 0, 0) // opened while n1's accounts are orphaned
	_ = gap
	c.eventually("n2 owns everything", 30*time.Second, c.allOwned("n2"))
	if took := time.Since(halted); took < shortLease.Lease-shortLease.Fence {
		t.Errorf("accounts moved after %v, before the lease could have expired", took)
	}
	for id, r := range c.owners() {
		if b := before[id]; b.NodeID == "n1" && r.Epoch != b.Epoch+1 {
			t.Errorf("account %d: epoch %d after takeover, want %d", id, r.Epoch, b.Epoch+1)
		}
	}
	c.eventually("takeover reconciled and copied the gap", 30*time.Second, c.converged)
	if dups := c.duplicateOpens(); len(dups) > 0 {
		t.Fatalf("duplicate copies: %v", dups)
	}
}

func TestCleanShutdownReleasesAtOnce(t *testing.T) {
	c := newCluster(t, 1, 30)
	n1 := c.start("n1", 100, nil)
	c.eventually("n1 owns all", 30*time.Second, c.allOwned("n1"))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := n1.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	for id, r := range c.owners() {
		if r.NodeID != "" {
			t.Fatalf("account %d still owned by %q after a clean stop", id, r.NodeID)
		}
	}
	mark := c.signals.Len()
	c.start("n2", 100, nil)
	// Released rows do not wait for their leases to expire: n2's first successful cycle
	// claims every one of them.
	c.awaitSignals("n2's first cycle", mark, func(sigs []actors.Signal) (bool, string) {
		for _, s := range sigs {
			if s.Kind == actors.SignalCycle && s.Node == "n2" && s.Err == nil {
				if s.Claimed != len(c.followers) {
					t.Errorf("n2's first cycle claimed %d of %d released followers", s.Claimed, len(c.followers))
				}
				return true, ""
			}
		}
		return false, "no cycle yet"
	})
	c.eventually("n2 owns all", 30*time.Second, c.allOwned("n2"))
}

// TestGapsAndRestartsAreRepaired: a dropped feed event and a feed restart each trigger
// exactly one reconcile per follower of that master, counted under its cause, and the
// followers converge; events in order cause none.
func TestGapsAndRestartsAreRepaired(t *testing.T) {
	c := newCluster(t, 2, 40) // 20 followers per master
	n := c.start("n1", 100, nil)
	ctx := context.Background()
	// Every follower loaded, attached to its master's feed and reconciled, with nothing
	// due: from here each master trade reaches it as a feed event.
	c.awaitIdle("followers idle after start", 0, c.followers)
	c.masterOpen(1, "EURUSD", broker.Buy, 0.3, 0, 0)
	c.masterOpen(2, "EURUSD", broker.Sell, 0.3, 0, 0)
	c.eventually("copied", 30*time.Second, c.converged)
	m1, m2 := c.followersOf(1), c.followersOf(2)
	m := n.Metrics()

	// exactlyOne checks that each of want had one reconcile since mark, with cause, and
	// no other account had any.
	exactlyOne := func(what string, mark int, want []int64, cause string) {
		t.Helper()
		c.awaitIdle(what+" settled", mark, want)
		got := c.reconcilesSince(mark)
		for _, f := range want {
			if k := got[f][cause]; k != 1 || len(got[f]) != 1 {
				t.Errorf("%s: follower %d had reconciles %v, want one %s", what, f, got[f], cause)
			}
			delete(got, f)
		}
		if len(got) > 0 {
			t.Errorf("%s: other followers reconciled: %v", what, got)
		}
	}

	// Gap: one event of m1 is dropped; the next one shows the gap to each follower.
	mark, gaps := c.signals.Len(), m.Reconciles(follower.CauseGap)
	must(t, c.sim.SetFaults(ctx, "m1", broker.Faults{DropEventRate: 1}))
	p := c.masterOpen(1, "GBPUSD", broker.Buy, 0.4, 0, 0)
	must(t, c.sim.SetFaults(ctx, "m1", broker.Faults{}))
	c.masterOpen(1, "USDJPY", broker.Sell, 0.1, 0, 0)
	c.eventually("gap repaired", 30*time.Second, c.converged)
	exactlyOne("one gap", mark, m1, "gap")
	if got := m.Reconciles(follower.CauseGap) - gaps; got != int64(len(m1)) {
		t.Errorf("gap metric rose by %d, want %d", got, len(m1))
	}

	// Restart: m2's feed drops (disconnect fault on its next trade) and is resubscribed
	// with a new epoch.
	mark, restarts := c.signals.Len(), (m.Reconciles(follower.CauseRestart) + m.Reconciles(follower.CauseEpoch))
	must(t, c.sim.SetFaults(ctx, "m2", broker.Faults{DisconnectRate: 1}))
	c.masterOpen(2, "GBPUSD", broker.Buy, 0.2, 0, 0)
	must(t, c.sim.SetFaults(ctx, "m2", broker.Faults{}))
	c.eventually("restart repaired", 30*time.Second, c.converged)
	exactlyOne("one feed restart", mark, m2, "feed_restart")
	if got := (m.Reconciles(follower.CauseRestart) + m.Reconciles(follower.CauseEpoch)) - restarts; got != int64(len(m2)) {
		t.Errorf("restart metric rose by %d, want %d", got, len(m2))
	}

	// Events of the new epoch are in order again: copied without any reconcile.
	mark = c.signals.Len()
	must(t, c.sim.MasterClose(ctx, "m1", p.Ticket, 0))
	c.masterOpen(2, "USDJPY", broker.Buy, 0.1, 0, 0)
	c.eventually("in-order events copied", 30*time.Second, c.converged)
	if got := c.reconcilesSince(mark); len(got) > 0 {
		t.Errorf("in-order events caused reconciles: %v", got)
	}
	if dups := c.duplicateOpens(); len(dups) > 0 {
		t.Fatalf("duplicate copies: %v", dups)
	}
}

func TestUnknownOutcomeNeverDuplicates(t *testing.T) {
	c := newCluster(t, 1, 30)
	ctx := context.Background()
	for _, f := range c.followers {
		must(t, c.sim.SetFaults(ctx, fmt.Sprintf("f%d", f), broker.Faults{TimeoutRate: 0.4, RequoteRate: 0.2}))
	}
	n := c.start("n1", 100, nil)
	c.eventually("owned", 30*time.Second, c.allOwned())
	for i := 0; i < 4; i++ {
		c.masterOpen(1, "EURUSD", broker.Buy, 0.1*float64(i+1), 0, 0)
	}
	// Faults off so the repair can finish; periodic reconciles are off, so what repairs is
	// the unknown-outcome path itself.
	c.eventually("some orders timed out", 30*time.Second, func() (bool, string) {
		return n.Metrics().OrdersUnknown.Load() > 0, "none yet"
	})
	for _, f := range c.followers {
		must(t, c.sim.SetFaults(ctx, fmt.Sprintf("f%d", f), broker.Faults{}))
	}
	c.masterOpen(1, "GBPUSD", broker.Sell, 0.1, 0, 0)
	c.eventually("converged", 30*time.Second, c.converged)
	if dups := c.duplicateOpens(); len(dups) > 0 {
		t.Fatalf("duplicate copies after unknown outcomes: %v", dups)
	}
}

// TestCleanStopHoldsBackAnOrderOfUnknownOutcome: one follower's order ends with an unknown
// outcome (the trade server's reply is lost; the order may still be on the wire) and the
// node stops cleanly before that order's deadline. Its lease is not released (a new
// owner could copy beside that order); every other follower's is.
func TestCleanStopHoldsBackAnOrderOfUnknownOutcome(t *testing.T) {
	c := newCluster(t, 1, 3)
	ctx := context.Background()
	victim := c.followers[0]
	must(t, c.sim.SetFaults(ctx, fmt.Sprintf("f%d", victim), broker.Faults{TimeoutRate: 1}))
	// A long trust: the order's deadline lies well after the stop.
	n1 := c.startWith("n1", 100, nil, func(cfg *actors.Config) { cfg.Lease = leasekeeper.DefaultConfig() })
	c.eventually("n1 owns all", 30*time.Second, c.allOwned("n1"))
	c.awaitIdle("followers idle", 0, c.followers)
	c.masterOpen(1, "EURUSD", broker.Buy, 0.1, 0, 0)
	c.eventually("the victim's order timed out", 30*time.Second, func() (bool, string) {
		return n1.Metrics().OrdersUnknown.Load() > 0, "none yet"
	})
	sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := n1.Stop(sctx); err != nil {
		t.Fatal(err)
	}
	for id, r := range c.owners() {
		switch {
		case id == victim && r.NodeID != "n1":
			t.Errorf("account %d, stopped with an order of unknown outcome in flight, was released (owner %q)", id, r.NodeID)
		case id != victim && r.NodeID != "":
			t.Errorf("account %d still owned by %q after a clean stop", id, r.NodeID)
		}
	}
}
