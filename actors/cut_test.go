package actors_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/snapcopier/copier/broker"
)

// TestCutFromTheDatabase puts toxiproxy between n1 and PostgreSQL and drops all traffic:
// n1's gate closes at its trusted deadline and it sends no order after that; n2 takes the
// accounts after the lease; when the cut heals n1 drops them; nothing is duplicated or
// missed.
func TestCutFromTheDatabase(t *testing.T) {
	c := newCluster(t, 1, 30)
	ctx := context.Background()
	db := c.proxiedPool("pg-n1")
	n1 := c.start("n1p", 100, db.pool)
	c.eventually("n1 owns all", 30*time.Second, c.allOwned("n1p"))
	c.masterOpen(1, "EURUSD", broker.Buy, 0.2, 0, 0)
	c.eventually("copied", 30*time.Second, c.converged)
	c.start("n2", 100, nil)

	db.cut(true)
	cutAt := time.Now()
	trusted := n1.Snapshot().TrustedUntil
	c.eventually("n1's gate closes", 30*time.Second, func() (bool, string) { return !n1.Ready(), "still open" })
	// Every cycle that could still succeed started before the cut, so the trust it gave
	// ends no later than cut + lease − fence.
	if tu, limit := n1.Snapshot().TrustedUntil, cutAt.Add(shortLease.Lease-shortLease.Fence); tu.After(limit) {
		t.Errorf("n1 trusted its leases until %v, after cut + lease − fence (%v)", tu, limit)
	}
	// Masters keep trading while n1 is cut off; n1's actors must drop that work.
	c.masterOpen(1, "GBPUSD", broker.Sell, 0.3, 0, 0)
	c.eventually("n2 takes over", 30*time.Second, c.allOwned("n2"))
	c.eventually("n2 copies", 30*time.Second, c.converged)
	db.cut(false)
	c.eventually("n1 lets go after healing", 30*time.Second, func() (bool, string) {
		return len(n1.Snapshot().Accounts) == 0, fmt.Sprintf("%d accounts", len(n1.Snapshot().Accounts))
	})
	// A cycle in flight at the cut may have committed just before it and moved the
	// deadline once more; that deadline is the last trust n1 had.
	deadline := trusted
	if tu := n1.Snapshot().TrustedUntil; tu.After(deadline) && tu.Before(cutAt.Add(shortLease.Lease)) {
		deadline = tu
	}
	log, err := c.sim.OrderLog(ctx, 0, 0)
	must(t, err)
	for _, e := range log {
		if e.Node == "n1p" && e.ServerTime.After(deadline) {
			t.Errorf("n1 sent an order at %v, after its gate closed at %v: %+v", e.ServerTime, deadline, e)
		}
	}
	if n1.Metrics().DroppedWork.Load() == 0 {
		t.Error("n1 dropped no work while cut off")
	}
	c.eventually("converged", 30*time.Second, c.converged)
	if dups := c.duplicateOpens(); len(dups) > 0 {
		t.Fatalf("duplicate copies: %v", dups)
	}
}
