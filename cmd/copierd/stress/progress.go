package stress

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/schollz/progressbar/v3"
)

// progress is the progress bar: elapsed seconds of the load and convergence against the
// planned total, described by phase, faults injected and orders seen.
type progress struct {
	bar *progressbar.ProgressBar
	w   io.Writer
	max int64
}

func newProgress(w io.Writer, total time.Duration) *progress {
	max := int64(total.Seconds())
	if max < 1 {
		max = 1
	}
	bar := progressbar.NewOptions64(max,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(250*time.Millisecond),
		progressbar.OptionSetPredictTime(false),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionShowDescriptionAtLineEnd(),
		progressbar.OptionSetRenderBlankState(true),
	)
	return &progress{bar: bar, w: w, max: max}
}

func (p *progress) update(elapsed time.Duration, desc string) {
	v := min(int64(elapsed.Seconds()), p.max-1)
	p.bar.Describe(desc)
	_ = p.bar.Set64(max(v, 0))
}

func (p *progress) finish() {
	_ = p.bar.Finish()
	_, _ = fmt.Fprintln(p.w)
}

// showProgress refreshes the bar twice a second until ctx ends.
func (r *runner) showProgress(ctx context.Context, p *progress) {
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		r.countOrders(ctx)
		var elapsed time.Duration
		if ls := r.loadStart.Load(); ls != nil {
			elapsed = time.Since(*ls)
		}
		r.faultsMu.Lock()
		faults := len(r.faults)
		r.faultsMu.Unlock()
		active := ""
		if r.faultsActive.Load() > 0 {
			active = "+1"
		}
		p.update(elapsed, fmt.Sprintf("%-9s %4.0fs | faults %d%s | orders %d", r.getPhase(), elapsed.Seconds(), faults, active, r.ordersSeen.Load()))
	}
}

// countOrders reads the new part of the order log and counts the nodes' orders.
func (r *runner) countOrders(ctx context.Context) {
	if r.sim == nil {
		return
	}
	es, err := r.sim.OrderLog(ctx, r.lastSeq, 0)
	if err != nil {
		return
	}
	n := int64(0)
	for _, e := range es {
		if !e.Master {
			n++
		}
		r.lastSeq = e.Seq
	}
	r.ordersSeen.Add(n)
}
