package actors_test

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"
)

// Fair share (issue 12): nodes that join a running node take their share by graceful
// hand-offs, with no account ever owned by two nodes at once (checked against the audit
// of every owner and epoch change, by the database's clock).

// balanced reports whether every follower is owned and each node owns want of them.
func (c *cluster) balanced(want map[string]int) func() (bool, string) {
	return func() (bool, string) {
		got := map[string]int{}
		for _, r := range c.owners() {
			if r.NodeID != "" && !r.LeaseUntil.IsZero() {
				got[r.NodeID]++
			}
		}
		for n, w := range want {
			if got[n] != w {
				return false, fmt.Sprintf("owned per node %v, want %v", got, want)
			}
		}
		return true, ""
	}
}

// auditOverlaps lists every claim that took an account from another node whose lease had
// not ended (by the database's clock): an account owned by two nodes at once.
func (c *cluster) auditOverlaps() []string {
	c.t.Helper()
	rows, err := c.db.Pool.Query(context.Background(), `
		SELECT account_id, old_node, new_node, new_epoch FROM handoff_audit
		WHERE new_node IS NOT NULL AND old_node IS NOT NULL AND old_node <> new_node
		  AND old_until IS NOT NULL AND old_until >= at ORDER BY at`)
	must(c.t, err)
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id, epoch int64
		var from, to string
		must(c.t, rows.Scan(&id, &from, &to, &epoch))
		out = append(out, fmt.Sprintf("account %d taken by %s from %s at epoch %d while leased", id, to, from, epoch))
	}
	must(c.t, rows.Err())
	return out
}

// auditHandOffs counts, per account, the releases by a node that kept running (every
// release in a scale-out is a hand-off).
func (c *cluster) auditHandOffs() map[int64]int {
	c.t.Helper()
	rows, err := c.db.Pool.Query(context.Background(),
		`SELECT account_id, count(*) FROM handoff_audit WHERE old_node IS NOT NULL AND new_node IS NULL GROUP BY account_id`)
	must(c.t, err)
	defer rows.Close()
	out := map[int64]int{}
	for rows.Next() {
		var id int64
		var n int
		must(c.t, rows.Scan(&id, &n))
		out[id] = n
	}
	must(c.t, rows.Err())
	return out
}

// TestScaleOutHandsEachAccountOffOnce: n1 owns 40 followers; n2..n4 join and record
// themselves; one wake-up (the only thing that makes these slow nodes cycle) lets n1 see
// all four and hand 30 back in one bounded step, which the others claim on the release's
// notification. Every node ends at its share (10), each account was handed off at most
// once, and no claim took an account whose lease had not ended.
func TestScaleOutHandsEachAccountOffOnce(t *testing.T) {
	c := newCluster(t, 4, 40)
	c.installHandoffAudit()
	n1 := c.startTimed("n1", 100, slowTiming, false)
	c.eventually("n1 owns all", 30*time.Second, c.allOwned("n1"))
	for _, name := range []string{"n2", "n3", "n4"} {
		mark := c.signals.Len()
		n := c.startTimed(name, 100, slowTiming, false)
		c.firstCycle(name, mark)
		c.eventually(name+" listens", 30*time.Second, func() (bool, string) { return n.Listening(), "not yet" })
	}
	if !n1.Listening() {
		c.eventually("n1 listens", 30*time.Second, func() (bool, string) { return n1.Listening(), "not yet" })
	}
	// A release notification from no node: every node runs one cycle.
	woken := time.Now()
	_, err := c.db.Pool.Exec(context.Background(), `SELECT pg_notify('copier_lease_released', 'sim outside')`)
	must(t, err)
	c.eventually("every node at its share", 60*time.Second, c.balanced(map[string]int{"n1": 10, "n2": 10, "n3": 10, "n4": 10}))
	t.Logf("scale-out 1→4, 40 followers: balanced %v after n1's wake-up (one hand-off cycle, claims on its notification)", time.Since(woken).Round(time.Millisecond))
	if o := c.auditOverlaps(); len(o) > 0 {
		t.Fatalf("accounts owned twice:\n%v", o)
	}
	handOffs := c.auditHandOffs()
	ids := make([]int64, 0, len(handOffs))
	for id, n := range handOffs {
		if n > 1 {
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	if len(ids) > 0 || len(handOffs) != 30 {
		t.Fatalf("%d accounts handed off (want 30), %v more than once", len(handOffs), ids)
	}
	if got := n1.Metrics().HandOffs.Load(); got != 30 {
		t.Fatalf("n1 counted %d hand-offs, want 30", got)
	}
}

// TestScaleOutWithoutNotificationsConverges: the same scale-out with no node listening (a
// pooler in transaction mode): the interval alone brings every node to its share, still
// without an account owned twice.
func TestScaleOutWithoutNotificationsConverges(t *testing.T) {
	c := newCluster(t, 4, 40)
	c.installHandoffAudit()
	c.startTimed("n1", 100, shortLease, true)
	c.eventually("n1 owns all", 30*time.Second, c.allOwned("n1"))
	joined := time.Now()
	for _, name := range []string{"n2", "n3", "n4"} {
		n := c.startTimed(name, 100, shortLease, true)
		if n.Listening() {
			t.Fatalf("%s listens with NoListen", name)
		}
	}
	c.eventually("every node at its share", 60*time.Second, c.balanced(map[string]int{"n1": 10, "n2": 10, "n3": 10, "n4": 10}))
	t.Logf("scale-out 1→4 without notifications, 40 followers, interval %v: balanced %v after the joins began", shortLease.Interval, time.Since(joined).Round(time.Millisecond))
	if o := c.auditOverlaps(); len(o) > 0 {
		t.Fatalf("accounts owned twice:\n%v", o)
	}
	var wakes int64
	for _, n := range c.nodes {
		wakes += n.Metrics().Wakes.Load()
	}
	if wakes != 0 {
		t.Fatalf("%d wake-ups without listeners", wakes)
	}
}
