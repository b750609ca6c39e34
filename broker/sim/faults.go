package sim

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/snapcopier/copier/broker"
)

// validateFaults rejects rates outside [0, 1] and negative latency.
func validateFaults(f broker.Faults) error {
	rates := []struct {
		name string
		v    float64
	}{
		{"RequoteRate", f.RequoteRate},
		{"TimeoutRate", f.TimeoutRate},
		{"DisconnectRate", f.DisconnectRate},
		{"DropEventRate", f.DropEventRate},
	}
	for _, r := range rates {
		if math.IsNaN(r.v) || r.v < 0 || r.v > 1 {
			return fmt.Errorf("%s %v is not within [0, 1]", r.name, r.v)
		}
	}
	if f.Latency < 0 {
		return fmt.Errorf("negative latency %v", f.Latency)
	}
	return nil
}

// faultsFor returns the profile that applies to a: its own, or else the global one.
func (s *Server) faultsFor(a *account) broker.Faults {
	if f := a.faults.Load(); f != nil {
		return *f
	}
	return *s.faults.Load()
}

// chance draws one decision with probability p from r. Certain outcomes (p <= 0, p >= 1)
// draw nothing.
func chance(r *rand.Rand, p float64) bool {
	switch {
	case p <= 0:
		return false
	case p >= 1:
		return true
	}
	return r.Float64() < p
}

// sleepCtx waits d, or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
