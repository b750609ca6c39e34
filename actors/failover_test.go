package actors_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/snapcopier/copier/actors"
	"github.com/snapcopier/copier/broker"
)

func TestCrashTakeover(t *testing.T) {
	c := newCluster(t, 1, 60)
	n1 := c.start("n1", 40, nil)
	c.eventually("n1 owns 40", 30*time.Second, func() (bool, string) {
		return len(n1.Snapshot().Accounts) == 40, fmt.Sprint(len(n1.Snapshot().Accounts))
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
	stopped := time.Now()
	c.start("n2", 100, nil)
	c.eventually("n2 claims them in its first cycles", 10*time.Second, c.allOwned("n2"))
	if took := time.Since(stopped); took >= shortLease.Lease {
		t.Errorf("claim took %v: released rows should not wait for expiry", took)
	}
}

// TestGapsAndRestartsAreRepaired: a dropped feed event and a feed restart each trigger
// exactly one reconcile per follower of that master, and the followers converge.
func TestGapsAndRestartsAreRepaired(t *testing.T) {
	c := newCluster(t, 2, 40) // 20 followers per master
	n := c.start("n1", 100, nil)
	c.eventually("owned", 30*time.Second, c.allOwned())
	ctx := context.Background()
	c.masterOpen(1, "EURUSD", broker.Buy, 0.3, 0, 0)
	c.masterOpen(2, "EURUSD", broker.Sell, 0.3, 0, 0)
	c.eventually("copied", 30*time.Second, c.converged)
	perMaster := int64(len(c.followers) / len(c.masters))
	m := n.Metrics()
	// Every account idle (no reconcile running), so each cause below starts its own.
	settled := func() (bool, string) {
		for _, a := range n.Snapshot().Accounts {
			if a.Phase != actors.PhaseCopying {
				return false, fmt.Sprintf("account %d %v", a.ID, a.Phase)
			}
		}
		return true, ""
	}
	c.eventually("settled", 30*time.Second, settled)

	// Gap: one event of m1 is dropped; the next one shows the gap to each follower.
	gaps := m.ReconcilesGap.Load()
	must(t, c.sim.SetFaults(ctx, "m1", broker.Faults{DropEventRate: 1}))
	p := c.masterOpen(1, "GBPUSD", broker.Buy, 0.4, 0, 0)
	must(t, c.sim.SetFaults(ctx, "m1", broker.Faults{}))
	c.masterOpen(1, "USDJPY", broker.Sell, 0.1, 0, 0)
	c.eventually("gap repaired", 30*time.Second, c.converged)
	c.eventually("settled", 30*time.Second, settled)
	if got := m.ReconcilesGap.Load() - gaps; got != perMaster {
		t.Errorf("one gap caused %d reconciles, want one per follower (%d)", got, perMaster)
	}

	// Restart: m2's feed drops (disconnect fault on its next trade) and is resubscribed
	// with a new epoch.
	restarts := m.ReconcilesRestart.Load()
	must(t, c.sim.SetFaults(ctx, "m2", broker.Faults{DisconnectRate: 1}))
	c.masterOpen(2, "GBPUSD", broker.Buy, 0.2, 0, 0)
	must(t, c.sim.SetFaults(ctx, "m2", broker.Faults{}))
	c.eventually("restart repaired", 30*time.Second, c.converged)
	c.eventually("settled", 30*time.Second, settled)
	if got := m.ReconcilesRestart.Load() - restarts; got != perMaster {
		t.Errorf("one feed restart caused %d reconciles, want one per follower (%d)", got, perMaster)
	}
	// Events of the new epoch are in order again: no further reconcile.
	gaps, restarts = m.ReconcilesGap.Load(), m.ReconcilesRestart.Load()
	must(t, c.sim.MasterClose(ctx, "m1", p.Ticket, 0))
	c.masterOpen(2, "USDJPY", broker.Buy, 0.1, 0, 0)
	c.eventually("in-order events copied", 30*time.Second, c.converged)
	if g, r := m.ReconcilesGap.Load()-gaps, m.ReconcilesRestart.Load()-restarts; g != 0 || r != 0 {
		t.Errorf("in-order events caused %d gap and %d restart reconciles", g, r)
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
