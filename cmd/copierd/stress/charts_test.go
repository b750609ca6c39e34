package stress

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestChartsFromSyntheticReport(t *testing.T) {
	dir := t.TempDir()
	if os.Getenv("COPIER_STRESS_KEEP") == "1" {
		dir, _ = os.MkdirTemp("", "stress-charts-")
		t.Logf("charts in %s", dir)
	}
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	rep := Report{loadStart: t0}
	for i := 0; i < 2000; i++ {
		rep.latencies = append(rep.latencies, time.Duration(500+i%700)*time.Microsecond)
	}
	for i := 0; i < 40; i++ {
		rep.latencies = append(rep.latencies, time.Duration(1+i)*150*time.Millisecond)
	}
	rep.latencies = append(rep.latencies, 0)
	rep.Latency = LatencyResult{Samples: len(rep.latencies), P50ms: 0.9, P99ms: 4000, MaxMs: 6000}
	for s := 0; s <= 60; s++ {
		c := map[string]int{"node-1": 125, "node-2": 125, "node-3": 50}
		if s > 20 {
			c = map[string]int{"node-1": 125, "node-2": 125, "node-4": 50}
		}
		rep.Ownership = append(rep.Ownership, ownershipSample{T: float64(s), Counts: c})
	}
	rep.Faults = []FaultRecord{{Kind: FaultKill, StartS: 14}, {Kind: FaultFreeze, Variant: "long", StartS: 30}, {Kind: FaultBroker, StartS: 45}}
	rep.Failover = SummariseFailovers([]Failover{{Node: "node-3", Accounts: 50, Seconds: 6.1, Done: true}, {Node: "node-5", Accounts: 20, Seconds: -1}}, 7*time.Second, 5*time.Second)
	files, err := writeCharts(rep, Options{OutDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 4 { // stages.png says "no traced copies"
		t.Fatalf("files %v", files)
	}
	for _, f := range files {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() < 1000 {
			t.Fatalf("%s: %v", f, err)
		}
	}
	// An empty report still draws.
	if _, err := writeCharts(Report{}, Options{OutDir: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
}
