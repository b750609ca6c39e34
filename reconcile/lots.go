package reconcile

import (
	"fmt"
	"math"

	"github.com/snapcopier/copier/broker"
)

// stepEpsilon absorbs binary floating-point error when volumes are divided by a lot step
// (0.3 / 0.1 is 2.9999999999999996).
const stepEpsilon = 1e-9

// RoundDownToStep returns the largest multiple of step not above v (v itself when it is
// already a multiple, despite floating-point error), with the step's decimals. A step ≤ 0
// returns v.
func RoundDownToStep(v, step float64) float64 {
	if !(step > 0) {
		return v
	}
	return normalizeLots(math.Floor(v/step+stepEpsilon)*step, step)
}

// roundUpToStep returns the smallest multiple of step not below v.
func roundUpToStep(v, step float64) float64 {
	if !(step > 0) {
		return v
	}
	return normalizeLots(math.Ceil(v/step-stepEpsilon)*step, step)
}

// roundToStep returns the multiple of step nearest to v.
func roundToStep(v, step float64) float64 {
	if !(step > 0) {
		return v
	}
	return normalizeLots(math.Round(v/step)*step, step)
}

// OnStep reports whether v is a multiple of step (within floating-point error).
func OnStep(v, step float64) bool {
	if !(step > 0) {
		return true
	}
	n := v / step
	return math.Abs(n-math.Round(n)) < 1e-6
}

// normalizeLots rounds v to the number of decimals of step, so that 3 × 0.1 is 0.3.
func normalizeLots(v, step float64) float64 {
	d := 0
	for s := step; d < 10 && math.Abs(s-math.Round(s)) > 1e-9*math.Max(1, s); d++ {
		s *= 10
	}
	f := math.Pow10(d)
	return math.Round(v*f) / f
}

// lotRules are the volume bounds of one follower symbol under one link's sizing settings.
type lotRules struct {
	min, max, step float64
}

// lotRulesFor combines the follower symbol's limits with the link's min_lot and max_lot.
func lotRulesFor(spec broker.SymbolSpec, s Sizing) (lotRules, SkipReason, string) {
	if !positive(spec.LotStep) || !positive(spec.MinLot) || !positive(spec.MaxLot) || spec.MaxLot < spec.MinLot {
		return lotRules{}, SkipSymbolSpec, fmt.Sprintf("symbol %s: min %v, max %v, step %v", spec.Name, spec.MinLot, spec.MaxLot, spec.LotStep)
	}
	r := lotRules{min: spec.MinLot, max: spec.MaxLot, step: spec.LotStep}
	if s.MinLot > r.min {
		r.min = s.MinLot
	}
	if s.MaxLot > 0 && s.MaxLot < r.max {
		r.max = s.MaxLot
	}
	r.min = roundUpToStep(r.min, r.step)
	r.max = RoundDownToStep(r.max, r.step)
	if r.max < r.min {
		return lotRules{}, SkipLotBounds, fmt.Sprintf("symbol %s: no volume on step %v between %v and %v", spec.Name, r.step, r.min, r.max)
	}
	return r, 0, ""
}

// fit caps v at the maximum, rounds it down to the step and raises it to the minimum when
// forceMin is set; below the minimum otherwise it returns SkipVolumeBelowMin.
func (r lotRules) fit(v float64, forceMin bool) (float64, SkipReason, string) {
	if !(v > 0) || math.IsInf(v, 0) {
		return 0, SkipVolumeBelowMin, fmt.Sprintf("computed volume %v", v)
	}
	if v > r.max {
		v = r.max
	}
	v = RoundDownToStep(v, r.step)
	if v < r.min {
		if !forceMin {
			return 0, SkipVolumeBelowMin, fmt.Sprintf("volume %v below minimum %v", v, r.min)
		}
		v = r.min
	}
	return v, 0, ""
}

// same reports whether two volumes are equal within half a step.
func (r lotRules) same(a, b float64) bool { return math.Abs(a-b) < r.step/2 }

// FitVolume applies the lot rules of the follower symbol spec and the link's sizing settings
// to a computed volume v: capped at the smaller of the symbol's and the settings' maximum
// (oversize is capped, not skipped), rounded down to the symbol's lot step, and, when below
// the larger of the two minimums, raised to it if s.ForceMin is set or skipped otherwise.
// It returns the volume, or 0 and the reason the copy is skipped.
func FitVolume(v float64, spec broker.SymbolSpec, s Sizing) (float64, SkipReason) {
	r, why, _ := lotRulesFor(spec, s)
	if why != 0 {
		return 0, why
	}
	out, why, _ := r.fit(v, s.ForceMin)
	return out, why
}
