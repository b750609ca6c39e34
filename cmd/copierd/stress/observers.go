package stress

import (
	"context"
	"sync"
	"time"
)

// ownershipSample is the number of followers each node owned at one moment, by the
// database.
type ownershipSample struct {
	At     time.Time      `json:"at"`
	T      float64        `json:"t_s"` // seconds since the load started (negative before)
	Counts map[string]int `json:"counts"`
	Free   int            `json:"free"`
}

// sampleOwnership records how many followers each node owns, every second.
func (r *runner) sampleOwnership(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		r.sampleOnce(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (r *runner) sampleOnce(ctx context.Context) {
	if r.pool == nil {
		return
	}
	qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	rows, err := r.pool.Query(qctx, `SELECT coalesce(node_id, ''), count(*) FROM trading_accounts
		WHERE role = 'follower' GROUP BY 1`)
	if err != nil {
		return
	}
	s := ownershipSample{At: time.Now(), Counts: map[string]int{}}
	for rows.Next() {
		var node string
		var n int
		if err := rows.Scan(&node, &n); err != nil {
			rows.Close()
			return
		}
		if node == "" {
			s.Free = n
		} else {
			s.Counts[node] = n
		}
	}
	rows.Close()
	if rows.Err() != nil {
		return
	}
	r.samplesMu.Lock()
	r.samples = append(r.samples, s)
	r.samplesMu.Unlock()
}

// lastCounts returns the latest ownership sample's counts.
func (r *runner) lastCounts() map[string]int {
	r.samplesMu.Lock()
	defer r.samplesMu.Unlock()
	if len(r.samples) == 0 {
		return nil
	}
	return r.samples[len(r.samples)-1].Counts
}

// scrapeNodes reads every live node's /metrics and /proc every two seconds.
func (r *runner) scrapeNodes(ctx context.Context) {
	t := time.NewTicker(2 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		r.scrapeAll(ctx)
	}
}

func (r *runner) scrapeAll(ctx context.Context) {
	var wg sync.WaitGroup
	for _, n := range r.allNodes() {
		if !n.alive() {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			n.sampleProc()
			n.scrapeMetrics(ctx, r.httpClient)
		}()
	}
	wg.Wait()
}
