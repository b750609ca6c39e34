package stress

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestMemoryByQuarter: each reading counts in the quarter of the load it falls in (the
// largest wins), readings outside the load only in the samples and the last heap.
func TestMemoryByQuarter(t *testing.T) {
	start := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return start.Add(time.Duration(s * float64(time.Second))) }
	const mib = 1 << 20
	samples := []memSample{
		{at: at(-2), rssKB: 50 * 1024, heapBytes: 90 * mib}, // before the load: no quarter
		{at: at(1), rssKB: 100 * 1024, heapBytes: 10 * mib},
		{at: at(9), rssKB: 110 * 1024, heapBytes: 12 * mib},
		{at: at(11), rssKB: 120 * 1024, heapBytes: 20 * mib},
		{at: at(39), rssKB: 130 * 1024, heapBytes: 40 * mib},
		{at: at(41), rssKB: 140 * 1024, heapBytes: 30 * mib}, // after the load
	}
	m := memoryReport(samples, start, 40*time.Second)
	if want := [4]float64{12, 20, 0, 40}; m.HeapByQuarterMB != want {
		t.Fatalf("heap by quarter %v, want %v", m.HeapByQuarterMB, want)
	}
	if want := [4]float64{110, 120, 0, 130}; m.RSSByQuarterMB != want {
		t.Fatalf("rss by quarter %v, want %v", m.RSSByQuarterMB, want)
	}
	if m.HeapLastMB != 30 || len(m.Samples) != len(samples) || m.Samples[0].T != -2 || m.Samples[5].HeapMB != 30 {
		t.Fatalf("last heap %v, samples %+v", m.HeapLastMB, m.Samples)
	}
	if memoryReport(nil, start, time.Minute) != nil {
		t.Fatal("a report without readings")
	}
	var w bytes.Buffer
	writeMemory(&w, []NodeReport{{ID: "node-1", Memory: m}, {ID: "node-2"}})
	if out := w.String(); !strings.Contains(out, "node-1") || strings.Contains(out, "node-2") || !strings.Contains(out, "40.0") {
		t.Fatalf("summary block:\n%s", out)
	}
}

// TestMemoryWithoutTheHeap: a node whose /metrics lacks the heap still reports its RSS.
func TestMemoryWithoutTheHeap(t *testing.T) {
	start := time.Now()
	m := memoryReport([]memSample{{at: start.Add(time.Second / 2), rssKB: 2048, heapBytes: -1}}, start, 4*time.Second)
	if m.Samples[0].HeapMB != -1 || m.RSSByQuarterMB[0] != 2 || m.HeapByQuarterMB[0] != 0 {
		t.Fatalf("%+v", m)
	}
}
