package actors_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/snapcopier/copier/actors"
	"github.com/snapcopier/copier/broker"
)

// TestJoiningNodesTakeTheirShare (issue 12): n1 holds every follower; n2 and then n3 join
// and the followers spread evenly (fair share; 12 followers, so 6/6 then 4/4/4). Every
// account that moves is handed back gracefully: released by n1 (its actor stopped and its
// writes flushed first) before another node claims it, never taken from a live lease, and
// none moves twice in a join. Nothing is copied twice, and a master trade after the
// moves reaches every follower once. With release notifications off the same holds, at
// the interval's pace.
func TestJoiningNodesTakeTheirShare(t *testing.T) {
	for _, noListen := range []bool{false, true} {
		t.Run(fmt.Sprintf("no-listen=%v", noListen), func(t *testing.T) {
			c := newCluster(t, 1, 12)
			c.installHandoffAudit()
			ctx := context.Background()
			tweak := func(cfg *actors.Config) { cfg.NoListen = noListen }
			mark := c.signals.Len()
			c.startWith("n1", 100, nil, tweak)
			c.eventually("n1 owns all", 30*time.Second, c.allOwned("n1"))
			c.awaitIdle("followers idle", mark, c.followers)
			a := c.masterOpen(1, "EURUSD", broker.Buy, 0.2, 0, 0)
			for _, f := range c.followers {
				c.awaitCopies("copied before the joins", f, 7001, a.Ticket)
			}

			shares := func(want map[string]int) func() (bool, string) {
				return func() (bool, string) {
					got := map[string]int{}
					for _, r := range c.owners() {
						got[r.NodeID]++
					}
					for n, w := range want {
						if got[n] != w {
							return false, fmt.Sprintf("owners %v, want %v", got, want)
						}
					}
					return len(got) == len(want), fmt.Sprintf("owners %v, want %v", got, want)
				}
			}
			c.startWith("n2", 100, nil, tweak)
			c.eventually("n1 and n2 share evenly", 60*time.Second, shares(map[string]int{"n1": 6, "n2": 6}))
			c.startWith("n3", 100, nil, tweak)
			c.eventually("three nodes share evenly", 60*time.Second, shares(map[string]int{"n1": 4, "n2": 4, "n3": 4}))

			// Every move went through a release: no claim took a lease still live, and no
			// account was released by a hand-off more than twice (once per join at most).
			var direct, overReleased int
			must(t, c.db.Pool.QueryRow(ctx, `SELECT count(*) FROM handoff_audit
				WHERE old_node IS NOT NULL AND new_node IS NOT NULL AND old_node <> new_node`).Scan(&direct))
			must(t, c.db.Pool.QueryRow(ctx, `SELECT count(*) FROM (SELECT account_id FROM handoff_audit
				WHERE old_node IS NOT NULL AND new_node IS NULL GROUP BY account_id HAVING count(*) > 2) x`).Scan(&overReleased))
			if direct != 0 || overReleased != 0 {
				t.Fatalf("%d claims took a live lease from another node; %d accounts moved more than once per join", direct, overReleased)
			}
			// No order of a moved account from its old owner after its new owner claimed it.
			log, err := c.sim.OrderLog(ctx, 0, 0)
			must(t, err)
			rows, err := c.db.Pool.Query(ctx, `SELECT account_id, new_node, at FROM handoff_audit WHERE new_node IS NOT NULL`)
			must(t, err)
			type claim struct {
				node string
				at   time.Time
			}
			claims := map[string][]claim{}
			for rows.Next() {
				var id int64
				var cl claim
				must(t, rows.Scan(&id, &cl.node, &cl.at))
				claims[fmt.Sprintf("f%d", id)] = append(claims[fmt.Sprintf("f%d", id)], cl)
			}
			must(t, rows.Err())
			for _, e := range log {
				for _, cl := range claims[e.Login] {
					if e.Node != "" && e.Node != cl.node && e.ServerTime.After(cl.at) && e.Executed {
						t.Fatalf("order %d for %s by %s executed after %s claimed it", e.Seq, e.Login, e.Node, cl.node)
					}
				}
			}

			b := c.masterOpen(1, "GBPUSD", broker.Sell, 0.1, 0, 0)
			for _, f := range c.followers {
				c.awaitCopies("copied after the moves", f, 7001, a.Ticket, b.Ticket)
			}
			if dups := c.duplicateOpens(); len(dups) > 0 {
				t.Fatalf("duplicate copies opened: %v", dups)
			}
			var handed int64
			for _, n := range []string{"n1", "n2", "n3"} {
				handed += c.nodes[n].Metrics().HandOffs.Load()
			}
			if handed != 10 { // 6 to n2, then 2 each from n1 and n2 to n3
				t.Fatalf("%d hand-offs, want 10: each node sheds its surplus once per join", handed)
			}

			// n1 leaves cleanly: the others claim its accounts up to their shares (6/6), so
			// no claim overshoots and nothing is handed off again.
			stopCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			must(t, c.nodes["n1"].Stop(stopCtx))
			c.eventually("n2 and n3 share n1's accounts", 60*time.Second, shares(map[string]int{"n2": 6, "n3": 6}))
			if h := c.nodes["n2"].Metrics().HandOffs.Load() + c.nodes["n3"].Metrics().HandOffs.Load(); h != 2 {
				t.Fatalf("claims after a clean stop overshot the shares: n2 and n3 handed off %d in all, want the 2 of n3's join", h)
			}
		})
	}
}
