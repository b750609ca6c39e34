package stress

import (
	"fmt"
	"io"
	"time"
)

// memSample is one scrape's reading of a node's memory: RSS from /proc, and the Go heap in
// use from its /metrics (heapBytes < 0: not exposed).
type memSample struct {
	at        time.Time
	rssKB     int64
	heapBytes float64
}

// MemoryReport is a node's memory over the load (issue 31 item 3: under a steady overload
// it must stay flat): the largest Go heap in use (go_memstats_heap_inuse_bytes) and RSS
// of each quarter of the load, and the last reading of the run. A heap that climbs quarter
// after quarter under a steady load is a queue without a bound or a leak; RSS follows the
// collector's target as well. 0: no reading in that quarter (the node was down).
type MemoryReport struct {
	HeapByQuarterMB [4]float64     `json:"heap_by_quarter_mb"`
	RSSByQuarterMB  [4]float64     `json:"rss_by_quarter_mb"`
	HeapLastMB      float64        `json:"heap_last_mb"`
	Samples         []MemorySample `json:"samples"`
}

// MemorySample is one reading: T seconds after the load started (negative: before).
type MemorySample struct {
	T      float64 `json:"t"`
	RSSMB  float64 `json:"rss_mb"`
	HeapMB float64 `json:"heap_mb"` // -1: the node did not expose its heap
}

// memoryReport folds a node's readings by quarter of the load [start, start+dur); nil
// without readings.
func memoryReport(samples []memSample, start time.Time, dur time.Duration) *MemoryReport {
	if len(samples) == 0 {
		return nil
	}
	m := &MemoryReport{Samples: make([]MemorySample, 0, len(samples))}
	for _, s := range samples {
		heap := -1.0
		if s.heapBytes >= 0 {
			heap = round3(s.heapBytes / (1 << 20))
			m.HeapLastMB = heap
		}
		rss := mb(s.rssKB)
		m.Samples = append(m.Samples, MemorySample{T: round3(s.at.Sub(start).Seconds()), RSSMB: rss, HeapMB: heap})
		off := s.at.Sub(start)
		if dur <= 0 || off < 0 || off >= dur {
			continue
		}
		q := int(4 * off / dur)
		m.HeapByQuarterMB[q] = max(m.HeapByQuarterMB[q], heap)
		m.RSSByQuarterMB[q] = max(m.RSSByQuarterMB[q], rss)
	}
	return m
}

// writeMemory is the summary's block of the nodes' memory by quarter of the load.
func writeMemory(w io.Writer, nodes []NodeReport) {
	header := false
	for _, n := range nodes {
		if n.Memory == nil {
			continue
		}
		if !header {
			fmt.Fprintf(w, "\nmemory over the load (MB, the largest reading of each quarter; heap in use, then RSS):\n")
			header = true
		}
		h, r := n.Memory.HeapByQuarterMB, n.Memory.RSSByQuarterMB
		fmt.Fprintf(w, "  %-8s heap %6.1f %6.1f %6.1f %6.1f  last %6.1f   rss %6.1f %6.1f %6.1f %6.1f\n",
			n.ID, h[0], h[1], h[2], h[3], n.Memory.HeapLastMB, r[0], r[1], r[2], r[3])
	}
}
