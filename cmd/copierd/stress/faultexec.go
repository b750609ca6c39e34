package stress

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/snapcopier/copier/broker"
)

// brokerFaults is the simulator's fault profile during a broker fault.
var brokerFaults = broker.Faults{RequoteRate: 0.2, TimeoutRate: 0.05, DisconnectRate: 0.02, DropEventRate: 0.1}

// runFaults injects the planned faults one after the other: each starts at its planned
// time, or a second after the previous one healed, whichever is later.
func (r *runner) runFaults(ctx context.Context, plan []plannedFault) {
	start := *r.loadStart.Load()
	var prevEnd time.Time
	for i, f := range plan {
		at := start.Add(f.At)
		if !prevEnd.IsZero() && at.Before(prevEnd.Add(time.Second)) {
			at = prevEnd.Add(time.Second)
		}
		if !sleepCtx(ctx, time.Until(at)) {
			return
		}
		rec := r.inject(ctx, i+1, f)
		prevEnd = rec.End
	}
}

// inject carries out one fault, holds it, heals it and records it.
func (r *runner) inject(ctx context.Context, seq int, f plannedFault) FaultRecord {
	r.faultsActive.Add(1)
	defer r.faultsActive.Add(-1)
	rec := FaultRecord{Seq: seq, Kind: f.Kind, Variant: f.Variant, Start: time.Now()}
	var err error
	switch f.Kind {
	case FaultKill:
		err = r.injectKill(ctx, f, &rec)
	case FaultFreeze:
		err = r.injectFreeze(ctx, f, &rec)
	case FaultCut:
		err = r.injectProxy(ctx, f, &rec, func(n *nodeProc) error { return n.proxy.cut() },
			func(h time.Duration) string {
				return fmt.Sprintf("all database traffic dropped for %.1fs", h.Seconds())
			})
	case FaultLatency:
		err = r.injectProxy(ctx, f, &rec, func(n *nodeProc) error { return n.proxy.latency(f.LatencyMs, f.JitterMs) },
			func(h time.Duration) string {
				return fmt.Sprintf("database latency %d±%d ms for %.1fs", f.LatencyMs, f.JitterMs, h.Seconds())
			})
	case FaultRestartDB:
		err = r.injectRestartDB(ctx, &rec)
	case FaultBroker:
		err = r.injectBroker(ctx, f, &rec)
	}
	rec.End = time.Now()
	if err != nil {
		rec.Err = err.Error()
	}
	rec.StartS, rec.EndS = r.since(rec.Start), r.since(rec.End)
	r.faultsMu.Lock()
	r.faults = append(r.faults, rec)
	r.faultsMu.Unlock()
	line := fmt.Sprintf("%s +%.3fs..+%.3fs fault %d %s", rec.Start.UTC().Format(time.RFC3339Nano), rec.StartS, rec.EndS, rec.Seq, rec.Kind)
	if rec.Variant != "" {
		line += " (" + rec.Variant + ")"
	}
	if rec.Target != "" {
		line += " on " + rec.Target
	}
	line += ": " + rec.Detail
	if rec.Err != "" {
		line += " [" + rec.Err + "]"
	}
	r.logMu.Lock()
	fmt.Fprintln(r.faultLog, line)
	r.logMu.Unlock()
	r.logf("%s", line)
	return rec
}

// pickNode chooses a running node with pick: among those that own followers when any
// does, else among all running ones.
func (r *runner) pickNode(pick uint64) *nodeProc {
	running := r.liveNodes(false)
	if len(running) == 0 {
		return nil
	}
	counts := r.lastCounts()
	var owning []*nodeProc
	for _, n := range running {
		if counts[n.id] > 0 {
			owning = append(owning, n)
		}
	}
	if len(owning) > 0 {
		running = owning
	}
	slices.SortFunc(running, func(a, b *nodeProc) int { return a.started.Compare(b.started) })
	return running[pick%uint64(len(running))]
}

var errNoNode = errors.New("no running node to target")

// injectKill sends SIGKILL to a node, starts a new one, and waits until every account
// the killed node held is owned by another node: the failover.
func (r *runner) injectKill(ctx context.Context, f plannedFault, rec *FaultRecord) error {
	n := r.pickNode(f.Pick)
	if n == nil {
		return errNoNode
	}
	rec.Target = n.id
	killedAt := time.Now()
	if err := n.kill(); err != nil {
		return err
	}
	<-n.done
	// Read what it held before anything can move (nobody may claim before its leases
	// expire), then start its replacement whatever the read gave.
	held, herr := r.ownedBy(ctx, n.id)
	repl, err := r.startNode()
	replID := "none"
	if err == nil {
		replID = repl.id
	}
	if herr != nil {
		rec.Detail = fmt.Sprintf("SIGKILL; replaced by %s; its accounts could not be read", replID)
		return errors.Join(fmt.Errorf("reading the killed node's accounts: %w", herr), err)
	}
	fo := Failover{Node: n.id, KilledAt: killedAt, Accounts: len(held), Seconds: -1}
	limit := r.o.Lease + r.o.Interval + r.o.FailoverSlack + 10*time.Second
	for {
		left, qerr := r.stillUnmoved(ctx, held, n.id)
		if qerr == nil && left == 0 {
			fo.Seconds, fo.Done = round3(time.Since(killedAt).Seconds()), true
			break
		}
		if time.Since(killedAt) > limit || !sleepCtx(ctx, 100*time.Millisecond) {
			break
		}
	}
	r.faultsMu.Lock()
	r.failovers = append(r.failovers, fo)
	r.faultsMu.Unlock()
	if fo.Done {
		rec.Detail = fmt.Sprintf("SIGKILL; held %d accounts; replaced by %s; all owned by others after %.2fs", fo.Accounts, replID, fo.Seconds)
	} else {
		rec.Detail = fmt.Sprintf("SIGKILL; held %d accounts; replaced by %s; NOT all owned by others after %v", fo.Accounts, replID, limit)
	}
	return err
}

// ownedBy returns the followers the database says node owns.
func (r *runner) ownedBy(ctx context.Context, node string) ([]int64, error) {
	var last error
	for attempt := 0; attempt < 25; attempt++ {
		qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		rows, err := r.pool.Query(qctx, `SELECT id FROM trading_accounts WHERE node_id = $1 ORDER BY id`, node)
		if err == nil {
			var ids []int64
			for rows.Next() {
				var id int64
				if err = rows.Scan(&id); err != nil {
					break
				}
				ids = append(ids, id)
			}
			rows.Close()
			if err == nil {
				err = rows.Err()
			}
			if err == nil {
				cancel()
				return ids, nil
			}
		}
		cancel()
		last = err
		if !sleepCtx(ctx, 200*time.Millisecond) {
			break
		}
	}
	return nil, last
}

// stillUnmoved counts the accounts of ids that no other node than node owns.
func (r *runner) stillUnmoved(ctx context.Context, ids []int64, node string) (int, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var n int
	err := r.pool.QueryRow(qctx, `SELECT count(*) FROM trading_accounts
		WHERE id = ANY($1) AND (node_id IS NULL OR node_id = $2)`, ids, node).Scan(&n)
	return n, err
}

// injectFreeze sends SIGSTOP to a node, holds, and sends SIGCONT.
func (r *runner) injectFreeze(ctx context.Context, f plannedFault, rec *FaultRecord) error {
	n := r.pickNode(f.Pick)
	if n == nil {
		return errNoNode
	}
	rec.Target = n.id
	// Land the SIGSTOP in the fan-out of copies that follows a master trade, where a node
	// may have passed its gate and not yet sent the order: the case a fence cannot cover.
	if r.gen.WaitTrade(ctx, 3*time.Second) {
		time.Sleep(time.Duration(f.Pick % uint64(3*time.Millisecond)))
	}
	start := time.Now()
	if err := n.freeze(); err != nil {
		return err
	}
	sleepCtx(ctx, f.Hold)
	err := n.thaw()
	end := time.Now()
	r.faultsMu.Lock()
	r.freezes = append(r.freezes, Freeze{Node: n.id, Start: start, End: end})
	r.faultsMu.Unlock()
	rel := "less"
	if end.Sub(start) > r.o.Fence {
		rel = "more"
	}
	rec.Detail = fmt.Sprintf("SIGSTOP for %.2fs (%s than the fence %v), then SIGCONT", end.Sub(start).Seconds(), rel, r.o.Fence)
	return err
}

// injectProxy applies a toxic to a node's database link, holds, and heals it.
func (r *runner) injectProxy(ctx context.Context, f plannedFault, rec *FaultRecord, apply func(*nodeProc) error, describe func(time.Duration) string) error {
	n := r.pickNode(f.Pick)
	if n == nil {
		return errNoNode
	}
	rec.Target = n.id
	start := time.Now()
	err := apply(n)
	if err == nil {
		sleepCtx(ctx, f.Hold)
	}
	n.proxy.heal()
	rec.Detail = describe(time.Since(start)) + ", then healed"
	return err
}

// injectRestartDB restarts PostgreSQL abruptly.
func (r *runner) injectRestartDB(ctx context.Context, rec *FaultRecord) error {
	if r.cluster == nil {
		rec.Detail = "not injected"
		return errNoCluster
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	start := time.Now()
	err := r.cluster.Restart(rctx)
	rec.Detail = fmt.Sprintf("PostgreSQL stopped (immediate) and started again in %.2fs", time.Since(start).Seconds())
	return err
}

// injectBroker turns on the simulator's requotes, timeouts, disconnects and dropped
// events, holds, and turns them off.
func (r *runner) injectBroker(ctx context.Context, f plannedFault, rec *FaultRecord) error {
	bctx := context.WithoutCancel(ctx)
	if err := r.sim.SetFaults(bctx, "", brokerFaults); err != nil {
		return err
	}
	start := time.Now()
	sleepCtx(ctx, f.Hold)
	err := r.sim.SetFaults(bctx, "", broker.Faults{})
	rec.Detail = fmt.Sprintf("simulator requotes %.0f%%, timeouts (unknown outcome) %.0f%%, disconnects %.0f%%, dropped events %.0f%% for %.1fs",
		brokerFaults.RequoteRate*100, brokerFaults.TimeoutRate*100, brokerFaults.DisconnectRate*100, brokerFaults.DropEventRate*100, time.Since(start).Seconds())
	return err
}
