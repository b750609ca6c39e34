package stress

import (
	"math/rand/v2"
	"time"
)

// plannedFault is one fault of the seeded schedule.
type plannedFault struct {
	At      time.Duration // from the start of the load
	Kind    FaultKind
	Variant string        // freeze: "short" (< fence) or "long" (> fence)
	Hold    time.Duration // how long the fault lasts before it heals
	// LatencyMs and JitterMs are the database latency of a latency fault.
	LatencyMs, JitterMs int64
	// Pick chooses the target node among the candidates when the fault starts.
	Pick uint64
}

// FaultRecord is one injected fault as it happened.
type FaultRecord struct {
	Seq     int       `json:"seq"`
	Kind    FaultKind `json:"kind"`
	Variant string    `json:"variant,omitempty"`
	Target  string    `json:"target,omitempty"`
	Detail  string    `json:"detail,omitempty"`
	Start   time.Time `json:"start"`
	End     time.Time `json:"end"`
	// StartS and EndS are seconds since the load started.
	StartS float64 `json:"start_s"`
	EndS   float64 `json:"end_s"`
	Err    string  `json:"error,omitempty"`
}

// planFaults returns the seeded fault schedule: every kind at least once (freeze as a
// short and a long freeze), more at random up to one per fault-every on average, spread
// over the load after the warmup. Hold times are drawn per kind from the lease timing.
func planFaults(o Options, rnd *rand.Rand) []plannedFault {
	var kinds []plannedFault
	for _, k := range o.Faults {
		if k == FaultFreeze {
			kinds = append(kinds, plannedFault{Kind: k, Variant: "short"}, plannedFault{Kind: k, Variant: "long"})
			continue
		}
		kinds = append(kinds, plannedFault{Kind: k})
	}
	if len(kinds) == 0 {
		return nil
	}
	rnd.Shuffle(len(kinds), func(i, j int) { kinds[i], kinds[j] = kinds[j], kinds[i] })
	span := o.Duration - o.Warmup
	n := max(len(kinds), int(span/o.FaultEvery))
	plan := make([]plannedFault, 0, n)
	plan = append(plan, kinds...)
	for len(plan) < n {
		k := o.Faults[rnd.IntN(len(o.Faults))]
		f := plannedFault{Kind: k}
		if k == FaultFreeze {
			f.Variant = "short"
			if rnd.IntN(2) == 0 {
				f.Variant = "long"
			}
		}
		plan = append(plan, f)
	}
	slot := span / time.Duration(n)
	longFreezes := 0
	for i := range plan {
		f := &plan[i]
		jitter := time.Duration(rnd.Float64() * 0.3 * float64(slot))
		f.At = o.Warmup + time.Duration(i)*slot + jitter
		f.Pick = rnd.Uint64()
		f.Hold = holdFor(o, f, rnd, &longFreezes)
	}
	return plan
}

// uniform returns a duration uniformly in [lo, hi].
func uniform(rnd *rand.Rand, lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(rnd.Int64N(int64(hi-lo)+1))
}

// holdFor draws how long a fault lasts.
func holdFor(o Options, f *plannedFault, rnd *rand.Rand, longFreezes *int) time.Duration {
	takeover := o.Lease + 2*o.Interval + time.Second // long enough for another node to claim
	switch f.Kind {
	case FaultKill:
		return 0 // the executor waits for the failover instead
	case FaultFreeze:
		if f.Variant == "short" {
			return uniform(rnd, o.Fence/4, o.Fence*3/4)
		}
		*longFreezes++
		if *longFreezes == 1 {
			return takeover // the first long freeze always outlasts the lease
		}
		return uniform(rnd, o.Fence+o.Fence/4, takeover)
	case FaultCut:
		return uniform(rnd, 2*o.Interval, takeover)
	case FaultLatency:
		f.LatencyMs = 100 + rnd.Int64N(700)
		f.JitterMs = f.LatencyMs / 5
		return uniform(rnd, 2*time.Second, 6*time.Second)
	case FaultRestartDB:
		return 0
	case FaultBroker:
		return uniform(rnd, 3*time.Second, 8*time.Second)
	}
	return 0
}
