package stress

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/snapcopier/copier/internal/copytrace"
)

// TestStageAccounting: each copy's latency splits into its path's stages, which add up
// to the latency; the slow copies' common traits and the stage they wait in are named.
func TestStageAccounting(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms float64) int64 { return t0.Add(time.Duration(ms * float64(time.Millisecond))).UnixNano() }
	var copies []copyMatch
	var recs []copytrace.Record
	// 90 fast event-path copies on node-1: feed 1 ms, mailbox 1, plan 1, slot 0, writer 1, wire 1.
	for i := range 90 {
		id := uuid.New()
		copies = append(copies, copyMatch{master: "m1", follower: "f", kind: "open", masterAt: t0, at: t0.Add(5 * time.Millisecond), requestID: id, node: "node-1"})
		recs = append(recs, copytrace.Record{RequestID: id, Path: copytrace.PathEvent, Action: "open", Attempts: 1 + i%2*0,
			EventServer: at(0), Received: at(1), Dequeued: at(2), Send: at(3), Slot: at(3), Written: at(4), Replied: at(6)})
	}
	// 10 slow reconcile-path copies on node-2: 2 s in the Reconciler's queue.
	for range 10 {
		id := uuid.New()
		copies = append(copies, copyMatch{master: "m2", follower: "g", kind: "close", masterAt: t0, at: t0.Add(2010 * time.Millisecond), requestID: id, node: "node-2"})
		recs = append(recs, copytrace.Record{RequestID: id, Path: copytrace.PathReconcile, Cause: "again", Action: "close", Attempts: 2,
			ReconAsked: at(-50), ReconStarted: at(2000), ReconDone: at(2005), Dequeued: at(2006), Send: at(2007), Slot: at(2008), Written: at(2008)})
	}
	// One copy without a record (a killed node's).
	copies = append(copies, copyMatch{master: "m1", masterAt: t0, at: t0.Add(time.Millisecond), requestID: uuid.New(), node: "node-3"})

	res := StageAccounting(copies, recs, 3)
	if res.Traced != 100 || res.Untraced != 1 || res.Dropped != 3 || res.Retried != 10 {
		t.Fatalf("counts: %+v", res)
	}
	if res.Slow.Copies != 10 || res.Slow.Dominant != StageReconcileQueue {
		t.Fatalf("slow: %d copies, dominant %q", res.Slow.Copies, res.Slow.Dominant)
	}
	if len(res.Slow.ByPath) != 1 || res.Slow.ByPath[0].Value != "reconcile:again" || res.Slow.ByNode[0].Value != "node-2" ||
		res.Slow.ByMaster[0].Value != "m2" || res.Slow.ByKind[0].Value != "close" {
		t.Fatalf("slow traits: %+v", res.Slow)
	}
	stat := func(set CopySet, name string) StageStat {
		for _, s := range set.Stages {
			if s.Stage == name {
				return s
			}
		}
		t.Fatalf("no stage %s in %+v", name, set.Stages)
		return StageStat{}
	}
	// The reconcile was asked before the master traded: the wait is 0 and the queue counts
	// from the trade.
	if q := stat(res.Slow, StageReconcileQueue); q.MaxMs != 2000 || q.Samples != 10 {
		t.Fatalf("queue: %+v", q)
	}
	if w := stat(res.Slow, StageReconcileWait); w.MaxMs != 0 {
		t.Fatalf("wait: %+v", w)
	}
	if f := stat(res.All, StageFeed); f.Samples != 90 || f.P50ms != 1 {
		t.Fatalf("feed: %+v", f)
	}
	// The stages of every copy add up to its latency.
	byID := map[uuid.UUID]copytrace.Record{}
	for _, r := range recs {
		byID[r.RequestID] = r
	}
	for _, c := range copies[:100] {
		tc := splitStages(c, byID[c.requestID])
		var sum time.Duration
		for _, d := range tc.stages {
			sum += d
		}
		if sum != c.latency() {
			t.Fatalf("stages add to %v, latency %v", sum, c.latency())
		}
	}
	if lines := res.summary(); len(lines) < 8 {
		t.Fatalf("summary: %q", lines)
	}

	// The chart draws, and so does a report without traces.
	dir := t.TempDir()
	files, err := writeCharts(Report{Stages: &res}, Options{OutDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(filepath.Join(dir, "stages.png")); err != nil || st.Size() < 1000 {
		t.Fatalf("stages.png: %v (files %v)", err, files)
	}
}

// TestTraceFileRoundTrip: what a node writes, the stress reads back whole; a cut file is
// an error, not fewer copies.
func TestTraceFileRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "n.trace")
	rc, err := copytrace.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		rc.Add(copytrace.Record{RequestID: uuid.New(), Account: int64(i), Path: copytrace.PathEvent, Send: int64(i + 1)})
	}
	if err := rc.Close(); err != nil {
		t.Fatal(err)
	}
	recs, dropped, err := copytrace.ReadFile(path)
	if err != nil || len(recs) != 3 || dropped != 0 || recs[1].Send != 2 {
		t.Fatalf("read %+v dropped %d err %v", recs, dropped, err)
	}
	b, _ := os.ReadFile(path)
	if err := os.WriteFile(path, b[:len(b)-30], 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := copytrace.ReadFile(path); err == nil {
		t.Fatal("a truncated trace read without error")
	}
}
