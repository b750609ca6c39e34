package stress

import (
	"cmp"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/snapcopier/copier/internal/copytrace"
)

// Stage accounting: every copy's latency (master trade to follower order, by the trade
// server's clock) split into the stages the node recorded for the order (copytrace),
// so that the report names the stage where copies wait. Pure functions, like check.go.

// The stages, in the order a copy passes them. An event-path copy passes feed, mailbox,
// plan and the broker stages; a reconcile-path copy passes the reconcile stages instead
// of the feed.
const (
	StageFeed           = "feed"            // master trade → the node read the event
	StageReconcileWait  = "reconcile_wait"  // master trade → a reconcile that could see it was asked for
	StageReconcileQueue = "reconcile_queue" // asked → the Reconciler started it (its queue and start rate)
	StageReconcileFetch = "reconcile_fetch" // started → positions fetched and planned
	StageMailbox        = "mailbox"         // event or reconcile result → the account actor took it up
	StagePlan           = "plan"            // taken up → the order's call starts (planning, earlier orders, retries)
	StageBrokerSlot     = "broker_slot"     // call → a request slot of the broker connection
	StageWriter         = "writer"          // slot → handed to the network by the connection's writer
	StageWireExec       = "wire_exec"       // handed to the network → executed at the trade server
)

// Stage indexes, in the order a copy passes them (stageNames).
const (
	iFeed = iota
	iReconcileWait
	iReconcileQueue
	iReconcileFetch
	iMailbox
	iPlan
	iBrokerSlot
	iWriter
	iWireExec
	nStages
)

// stageNames names the stages by index.
var stageNames = [nStages]string{StageFeed, StageReconcileWait, StageReconcileQueue, StageReconcileFetch, StageMailbox,
	StagePlan, StageBrokerSlot, StageWriter, StageWireExec}

// Stages lists the stages in order.
var Stages = stageNames[:]

// SlowCopy is the latency from which a copy counts as slow: the second hump of the
// latency histogram starts here.
const SlowCopy = 100 * time.Millisecond

// StageStat is one stage's time over a set of copies.
type StageStat struct {
	Stage   string  `json:"stage"`
	Samples int     `json:"samples"`
	P50ms   float64 `json:"p50_ms"`
	P99ms   float64 `json:"p99_ms"`
	MaxMs   float64 `json:"max_ms"`
	// Share is this stage's part of the summed latency of the copies (0..1).
	Share float64 `json:"share"`
}

// Count is how many copies share one value of an attribute.
type Count struct {
	Value string  `json:"value"`
	N     int     `json:"n"`
	Share float64 `json:"share"` // of the copies counted
}

// CopySet describes a set of copies: where their time went and what they have in common.
type CopySet struct {
	Copies int         `json:"copies"`
	Stages []StageStat `json:"stages"`
	// Dominant is the stage with the largest share of the summed latency.
	Dominant string  `json:"dominant"`
	ByPath   []Count `json:"by_path"` // event, or reconcile:<cause>
	ByNode   []Count `json:"by_node"`
	ByMaster []Count `json:"by_master"` // the five most common
	ByKind   []Count `json:"by_kind"`
}

// StageResult is the stage accounting of a run.
type StageResult struct {
	// Traced copies are those whose order the node recorded; Untraced were matched in the
	// order log without a record (a killed node loses its trace).
	Traced   int `json:"traced"`
	Untraced int `json:"untraced"`
	Dropped  int `json:"dropped_by_nodes"` // records a node could not keep (its bound)
	// Attempts counts orders that needed more than one broker call (retries).
	Retried int     `json:"retried"`
	All     CopySet `json:"all"`
	// Slow is the copies at or above SlowMs.
	SlowMs float64 `json:"slow_ms"`
	Slow   CopySet `json:"slow"`
}

// tracedCopy is a copy with its stages.
type tracedCopy struct {
	m      copyMatch
	path   string
	stages [nStages]time.Duration
	has    [nStages]bool
}

// splitStages splits one copy's latency into its stages: each stage runs from one
// recorded point to the next, every point clamped to be no earlier than the one before
// (clocks of two processes, and a reconcile asked before the master traded), so the
// stages add up to the copy's latency exactly. A point not recorded (0) adds nothing.
func splitStages(m copyMatch, rec copytrace.Record) tracedCopy {
	tc := tracedCopy{m: m, path: string(rec.Path)}
	type point struct {
		stage int
		at    int64
	}
	var pts []point
	if rec.Path == copytrace.PathEvent {
		pts = []point{{iFeed, rec.Received}, {iMailbox, rec.Dequeued}}
	} else {
		tc.path = "reconcile:" + rec.Cause
		pts = []point{{iReconcileWait, rec.ReconAsked}, {iReconcileQueue, rec.ReconStarted}, {iReconcileFetch, rec.ReconDone}, {iMailbox, rec.Dequeued}}
	}
	pts = append(pts, point{iPlan, rec.Send}, point{iBrokerSlot, rec.Slot}, point{iWriter, rec.Written}, point{iWireExec, m.at.UnixNano()})
	prev := m.masterAt.UnixNano()
	for _, p := range pts {
		tc.has[p.stage] = true
		if p.at == 0 {
			continue
		}
		at := max(p.at, prev)
		tc.stages[p.stage] += time.Duration(at - prev)
		prev = at
	}
	return tc
}

// StageAccounting joins the matched copies with the nodes' trace records by request id.
func StageAccounting(copies []copyMatch, records []copytrace.Record, dropped int) StageResult {
	byID := make(map[uuid.UUID]*copytrace.Record, len(records))
	res := StageResult{Dropped: dropped, SlowMs: ms(SlowCopy)}
	for i := range records {
		byID[records[i].RequestID] = &records[i]
		if records[i].Attempts > 1 {
			res.Retried++
		}
	}
	var all, slow []tracedCopy
	for _, c := range copies {
		rec := byID[c.requestID]
		if rec == nil {
			res.Untraced++
			continue
		}
		tc := splitStages(c, *rec)
		all = append(all, tc)
		if c.latency() >= SlowCopy {
			slow = append(slow, tc)
		}
	}
	res.Traced = len(all)
	res.All, res.Slow = describeCopies(all), describeCopies(slow)
	return res
}

// describeCopies summarises a set of traced copies.
func describeCopies(cs []tracedCopy) CopySet {
	set := CopySet{Copies: len(cs)}
	if len(cs) == 0 {
		return set
	}
	var total time.Duration
	var sums [nStages]time.Duration
	var kept []int // the stage index of each entry of set.Stages
	for i, name := range stageNames {
		var ds []time.Duration
		for _, c := range cs {
			if c.has[i] {
				ds = append(ds, c.stages[i])
				sums[i] += c.stages[i]
			}
		}
		total += sums[i]
		if len(ds) == 0 {
			continue
		}
		slices.Sort(ds)
		set.Stages = append(set.Stages, StageStat{Stage: name, Samples: len(ds),
			P50ms: ms(Percentile(ds, 50)), P99ms: ms(Percentile(ds, 99)), MaxMs: ms(ds[len(ds)-1])})
		kept = append(kept, i)
	}
	best := 0
	for j, i := range kept {
		if total > 0 {
			set.Stages[j].Share = round3(float64(sums[i]) / float64(total))
		}
		if sums[i] > sums[kept[best]] {
			best = j
		}
	}
	set.Dominant = set.Stages[best].Stage
	count := func(key func(tracedCopy) string, top int) []Count {
		n := map[string]int{}
		for _, c := range cs {
			n[key(c)]++
		}
		out := make([]Count, 0, len(n))
		for v, k := range n {
			out = append(out, Count{Value: v, N: k, Share: round3(float64(k) / float64(len(cs)))})
		}
		slices.SortFunc(out, func(a, b Count) int { return cmp.Or(b.N-a.N, cmp.Compare(a.Value, b.Value)) })
		if top > 0 && len(out) > top {
			out = out[:top]
		}
		return out
	}
	set.ByPath = count(func(c tracedCopy) string { return c.path }, 0)
	set.ByNode = count(func(c tracedCopy) string { return c.m.node }, 0)
	set.ByMaster = count(func(c tracedCopy) string { return c.m.master }, 5)
	set.ByKind = count(func(c tracedCopy) string { return c.m.kind }, 0)
	return set
}

// summary is the stage accounting's lines of the text summary.
func (s StageResult) summary() []string {
	if s.Traced == 0 {
		return []string{fmt.Sprintf("stages: no traced copies (%d untraced)", s.Untraced)}
	}
	lines := []string{fmt.Sprintf("stages of %d traced copies (%d untraced, %d records dropped, %d orders retried); p50 / p99 / max ms, share of all latency:",
		s.Traced, s.Untraced, s.Dropped, s.Retried)}
	slowByStage := map[string]StageStat{}
	for _, st := range s.Slow.Stages {
		slowByStage[st.Stage] = st
	}
	for _, st := range s.All.Stages {
		line := fmt.Sprintf("  %-16s %9.1f %9.1f %9.1f  %5.1f%%", st.Stage, st.P50ms, st.P99ms, st.MaxMs, 100*st.Share)
		if sl, ok := slowByStage[st.Stage]; ok {
			line += fmt.Sprintf("   slow: %9.1f %9.1f %9.1f  %5.1f%%", sl.P50ms, sl.P99ms, sl.MaxMs, 100*sl.Share)
		}
		lines = append(lines, line)
	}
	lines = append(lines, fmt.Sprintf("  all copies: most time in %s; paths %s", s.All.Dominant, counts(s.All.ByPath)))
	if s.Slow.Copies == 0 {
		return append(lines, fmt.Sprintf("  slow copies (≥ %.0f ms): none", s.SlowMs))
	}
	return append(lines,
		fmt.Sprintf("  slow copies (≥ %.0f ms): %d (%.2f%%), most time in %s", s.SlowMs, s.Slow.Copies,
			100*float64(s.Slow.Copies)/float64(s.Traced), s.Slow.Dominant),
		"    by path   "+counts(s.Slow.ByPath),
		"    by node   "+counts(s.Slow.ByNode),
		"    by kind   "+counts(s.Slow.ByKind),
		"    by master "+counts(s.Slow.ByMaster)+" (top 5)")
}

func counts(cs []Count) string {
	out := ""
	for i, c := range cs {
		if i > 0 {
			out += ", "
		}
		out += fmt.Sprintf("%s %d (%.0f%%)", c.Value, c.N, 100*c.Share)
	}
	return out
}

// readTraces reads every node's trace file. A node writes its records as they come, so a
// killed node's file holds those written before it died, without the trailer: they count,
// and its later copies are untraced.
func (r *runner) readTraces() ([]copytrace.Record, int, []error) {
	var all []copytrace.Record
	var dropped int
	var errs []error
	for _, n := range r.allNodes() {
		path := filepath.Join(r.o.OutDir, n.id+".trace")
		recs, d, err := copytrace.ReadFile(path)
		if err != nil && n.getState() != nodeKilled {
			errs = append(errs, fmt.Errorf("%s: %w", n.id, err))
			continue
		}
		all, dropped = append(all, recs...), dropped+d
	}
	return all, dropped, errs
}
