package stress

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// Scenarios (Options.Scenario).
const (
	// ScenarioFaults runs Nodes nodes from the start and injects the faults.
	ScenarioFaults = "faults"
	// ScenarioScale starts one node that claims every follower, adds nodes one by one up
	// to Nodes (each must bring the cluster to balance: every node within ±10 % of its
	// share), stops one cleanly and kills another (replaced), all while the masters trade.
	ScenarioScale = "scale"
)

// ScaleResult is what the scale scenario measured.
type ScaleResult struct {
	// Steps are the membership changes in order, each with the time until the followers
	// were balanced again over the running nodes.
	Steps []ScaleStep `json:"steps"`
	// CleanStops: the time from SIGTERM until every account of the stopped node was owned
	// by another node (the release wakes the others; target ≤ 1 s plus the stop itself).
	CleanStops []CleanStop `json:"clean_stops"`
	// HandOffs is every node's copier_lease_handoffs_total at its last scrape, summed.
	HandOffs int64 `json:"handoffs"`
	// LimitS bounds each step's time to balance.
	LimitS float64 `json:"limit_s"`
}

// ScaleStep is one membership change and the balance after it.
type ScaleStep struct {
	What     string  `json:"what"` // "node-2 joins", "node-1 stops cleanly", "node-3 killed"
	Nodes    int     `json:"nodes"`
	Share    int     `json:"share"`
	Seconds  float64 `json:"balanced_after_s"` // -1: not balanced within the limit
	Balanced bool    `json:"balanced"`
	Owners   string  `json:"owners"` // the last ownership counts seen
}

// CleanStop is one node stopped cleanly and how long its accounts took to move.
type CleanStop struct {
	Node     string  `json:"node"`
	Accounts int     `json:"accounts"`
	Seconds  float64 `json:"reowned_after_s"` // from SIGTERM; -1 when not all moved
	Done     bool    `json:"done"`
}

// runScale drives the scale scenario's membership changes during the load.
func (r *runner) runScale(ctx context.Context) {
	o := r.o
	limit := r.scaleLimit()
	step := func(what string) {
		st := r.awaitBalance(ctx, what, limit)
		r.faultsMu.Lock()
		r.scale.Steps = append(r.scale.Steps, st)
		r.faultsMu.Unlock()
		r.logf("scale: %s: balanced %v after %.2fs over %d nodes (share %d; %s)", what, st.Balanced, st.Seconds, st.Nodes, st.Share, st.Owners)
	}
	if !sleepCtx(ctx, o.Warmup) {
		return
	}
	for len(r.liveNodes(false)) < o.Nodes {
		n, err := r.startNode()
		if err != nil {
			r.logf("scale: starting a node: %v", err)
			return
		}
		step(n.id + " joins")
	}
	if o.Nodes < 3 {
		return // a clean stop and a kill need a node to stay
	}
	// A clean stop: SIGTERM, the node releases everything (with a NOTIFY) and exits.
	victim := r.liveNodes(false)[0]
	held, err := r.ownedBy(ctx, victim.id)
	if err != nil {
		r.logf("scale: reading %s's accounts: %v", victim.id, err)
		return
	}
	cs := CleanStop{Node: victim.id, Accounts: len(held), Seconds: -1}
	stopped := time.Now()
	stopErr := make(chan error, 1)
	go func() { stopErr <- victim.stop(30 * time.Second) }()
	for time.Since(stopped) < limit {
		if left, err := r.stillUnmoved(ctx, held, victim.id); err == nil && left == 0 {
			cs.Seconds, cs.Done = round3(time.Since(stopped).Seconds()), true
			break
		}
		if !sleepCtx(ctx, 20*time.Millisecond) {
			break
		}
	}
	if err := <-stopErr; err != nil {
		r.logf("scale: stopping %s: %v", victim.id, err)
	}
	r.faultsMu.Lock()
	r.scale.CleanStops = append(r.scale.CleanStops, cs)
	r.faultsMu.Unlock()
	r.logf("scale: %s stopped cleanly; its %d accounts owned by others after %.2fs", victim.id, cs.Accounts, cs.Seconds)
	step(victim.id + " stops cleanly")

	// A kill: SIGKILL and a replacement (the kill fault's own bookkeeping measures the
	// failover against the lease).
	rec := r.inject(ctx, 1, plannedFault{Kind: FaultKill})
	step(rec.Target + " killed and replaced")
}

// scaleLimit bounds each balance: a few hand-off rounds of 500 accounts and the claims
// after them, or a lease when a killed node's accounts must expire first.
func (r *runner) scaleLimit() time.Duration {
	o := r.o
	rounds := time.Duration(o.Followers/500+3) * o.Interval
	return o.Lease + rounds + o.FailoverSlack + 10*time.Second
}

// awaitBalance waits until every running node owns within ±10 % of its share (at least
// one account of slack) and no follower is free.
func (r *runner) awaitBalance(ctx context.Context, what string, limit time.Duration) ScaleStep {
	start := time.Now()
	st := ScaleStep{What: what, Seconds: -1}
	for {
		nodes := r.liveNodes(false)
		st.Nodes = len(nodes)
		st.Share = (r.o.Followers + len(nodes) - 1) / max(len(nodes), 1)
		counts, free, err := r.ownerCounts(ctx)
		if err == nil {
			var parts []string
			ok := free == 0
			for _, n := range nodes {
				c := counts[n.id]
				parts = append(parts, fmt.Sprintf("%s=%d", n.id, c))
				if d := c - st.Share; d*10 > max(st.Share, 10) || -d*10 > max(st.Share, 10) {
					ok = false
				}
			}
			st.Owners = strings.Join(parts, " ") + fmt.Sprintf(" free=%d", free)
			if ok {
				st.Seconds, st.Balanced = round3(time.Since(start).Seconds()), true
				return st
			}
		}
		if time.Since(start) > limit || !sleepCtx(ctx, 50*time.Millisecond) {
			return st
		}
	}
}

// ownerCounts counts the followers owned by each node with a live lease, and the others.
func (r *runner) ownerCounts(ctx context.Context) (map[string]int, int, error) {
	qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	rows, err := r.pool.Query(qctx, `SELECT coalesce(node_id, ''), count(*) FROM trading_accounts
		WHERE role = 'follower' AND enabled GROUP BY 1`)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	out, free := map[string]int{}, 0
	for rows.Next() {
		var n string
		var c int
		if err := rows.Scan(&n, &c); err != nil {
			return nil, 0, err
		}
		if n == "" {
			free += c
		} else {
			out[n] = c
		}
	}
	return out, free, rows.Err()
}
