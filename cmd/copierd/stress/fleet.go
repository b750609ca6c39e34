package stress

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"
)

// startNode starts the next node process with its own database proxy.
func (r *runner) startNode() (*nodeProc, error) {
	r.nodesMu.Lock()
	r.nextNode++
	id := fmt.Sprintf("node-%d", r.nextNode)
	r.nodesMu.Unlock()
	px, err := r.proxies.open(id)
	if err != nil {
		return nil, fmt.Errorf("stress: %w", err)
	}
	dbURL, err := withHost(r.dbURL, px.addr)
	if err != nil {
		px.stop()
		return nil, fmt.Errorf("stress: %w", err)
	}
	o := r.o
	args := []string{
		"--platform", Platform, "--broker", r.brokerURL(), "--node-id", id,
		"--capacity", strconv.Itoa(o.Capacity), "--lease", o.Lease.String(), "--fence", o.Fence.String(),
		"--interval", o.Interval.String(), "--reconcile-every", o.ReconcileEvery.String(),
		"--http", "127.0.0.1:0", "--log-format", "json", "--log-level", o.NodeLogLevel, "--migrate=false",
	}
	if o.TraceCopies {
		args = append(args, "--trace-copies", filepath.Join(o.OutDir, id+".trace"))
	}
	env := []string{"COPIER_DATABASE_URL=" + dbURL, "COPIER_BRIDGE_TOKEN=" + r.token}
	if r.front != nil {
		env = append(env, "COPIER_FIX_TOKEN="+r.token)
	}
	n, err := startNode(o.Copierd, id, o.OutDir, args, env, px)
	if err != nil {
		px.stop()
		return nil, fmt.Errorf("stress: %w", err)
	}
	r.nodesMu.Lock()
	r.nodes = append(r.nodes, n)
	r.nodesMu.Unlock()
	r.logf("started %s (pid %d, db proxy %s, http %s)", id, n.pid, px.addr, n.httpAddr)
	return n, nil
}

// allNodes returns every node started so far.
func (r *runner) allNodes() []*nodeProc {
	r.nodesMu.Lock()
	defer r.nodesMu.Unlock()
	return slices.Clone(r.nodes)
}

// liveNodes returns the nodes that run now (frozen ones included when withFrozen).
func (r *runner) liveNodes(withFrozen bool) []*nodeProc {
	var out []*nodeProc
	for _, n := range r.allNodes() {
		switch n.getState() {
		case nodeRunning:
			out = append(out, n)
		case nodeFrozen:
			if withFrozen {
				out = append(out, n)
			}
		}
	}
	return out
}

// waitOwned waits until every follower is owned by a node.
func (r *runner) waitOwned(ctx context.Context, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		free, err := r.unowned(ctx)
		if err == nil && free == 0 {
			r.logf("every follower is owned")
			return nil
		}
		for _, n := range r.allNodes() {
			if !n.alive() {
				return fmt.Errorf("stress: node %s exited at start (see %s)", n.id, n.logPath)
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("stress: the nodes did not claim every follower within %v (%d free; last error %v)", within, free, err)
		}
		if !sleepCtx(ctx, 200*time.Millisecond) {
			return fmt.Errorf("stress: interrupted: %w", ctx.Err())
		}
	}
}

// waitCopying waits until the nodes report every follower in phase copying (loaded,
// connected, reconciled), so the load meets a cluster that is ready. When that takes
// longer than within, the load starts anyway (the run log says so).
// It reports whether every follower was copying in time.
func (r *runner) waitCopying(ctx context.Context, within time.Duration) (bool, error) {
	start := time.Now()
	deadline := start.Add(within)
	for {
		r.scrapeAll(ctx)
		var copying int64
		for _, n := range r.liveNodes(false) {
			n.mu.Lock()
			copying += n.stats.copying
			n.mu.Unlock()
		}
		if copying >= int64(len(r.followers)) {
			r.logf("every follower is copying after %.1fs", time.Since(start).Seconds())
			return true, nil
		}
		if time.Now().After(deadline) {
			r.logf("only %d of %d followers are copying after %v; starting the load anyway", copying, len(r.followers), within)
			return false, nil
		}
		if !sleepCtx(ctx, 500*time.Millisecond) {
			return false, fmt.Errorf("stress: interrupted: %w", ctx.Err())
		}
	}
}

// unowned counts followers without a live lease.
func (r *runner) unowned(ctx context.Context) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var n int
	err := r.pool.QueryRow(ctx, `SELECT count(*) FROM trading_accounts
		WHERE role = 'follower' AND (node_id IS NULL OR lease_until IS NULL OR lease_until < now())`).Scan(&n)
	return n, err
}

// nodeExit is how a node process ended.
type nodeExit struct {
	state nodeState
	err   error
	ended time.Time
}

// stopAllNodes stops every live node cleanly (in parallel) and reports how each ended.
func (r *runner) stopAllNodes() map[string]nodeExit {
	nodes := r.allNodes()
	exits := make(map[string]nodeExit, len(nodes))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			state := n.getState()
			var err error
			if n.alive() && (state == nodeRunning || state == nodeFrozen) {
				err = n.stop(30 * time.Second)
				state = nodeStopping
			} else {
				<-n.done
				n.mu.Lock()
				err = n.exitErr
				n.mu.Unlock()
			}
			n.proxy.stop()
			n.mu.Lock()
			ended := n.ended
			n.mu.Unlock()
			mu.Lock()
			exits[n.id] = nodeExit{state: state, err: err, ended: ended}
			mu.Unlock()
		}()
	}
	wg.Wait()
	return exits
}
