package sim

import (
	"math"
	"unicode/utf8"

	"github.com/snapcopier/copier/broker"
)

// stepTolerance is the relative tolerance of lot-step checks, so that 0.1+0.2 lots is on
// the 0.01 step.
const stepTolerance = 1e-6

// checkVolume validates an order volume against the symbol's limits and returns it
// rounded onto the lot step.
func checkVolume(c SymbolConfig, v float64) (float64, error) {
	if !(v > 0) || math.IsInf(v, 0) {
		return 0, errInvalidVolume("volume %v must be positive", v)
	}
	eps := c.LotStep * stepTolerance
	if v < c.MinLot-eps {
		return 0, errInvalidVolume("volume %v below the minimum %v of %s", v, c.MinLot, c.Name)
	}
	if v > c.MaxLot+eps {
		return 0, errInvalidVolume("volume %v above the maximum %v of %s", v, c.MaxLot, c.Name)
	}
	steps := v / c.LotStep
	if math.Abs(steps-math.Round(steps)) > stepTolerance {
		return 0, errInvalidVolume("volume %v is not a multiple of the lot step %v of %s", v, c.LotStep, c.Name)
	}
	return normLots(v, c.LotStep), nil
}

// normLots rounds v onto the lot step, removing float noise.
func normLots(v, step float64) float64 {
	n := math.Round(v / step)
	return math.Round(n*step*1e8) / 1e8
}

// sameLots reports whether two volumes are equal within the step tolerance.
func sameLots(a, b, step float64) bool {
	return math.Abs(a-b) <= step*stepTolerance
}

// checkStops validates SL and TP (0 = none) of a position of side against ref, the price
// the position would close at now: a buy needs SL < ref < TP, a sell TP < ref < SL.
func checkStops(side broker.Side, sl, tp, ref float64) error {
	for _, p := range []float64{sl, tp} {
		if p < 0 || math.IsNaN(p) || math.IsInf(p, 0) {
			return errInvalidStops("invalid stop price %v", p)
		}
	}
	if side == broker.Buy {
		if sl != 0 && sl >= ref {
			return errInvalidStops("buy stop loss %v must be below %v", sl, ref)
		}
		if tp != 0 && tp <= ref {
			return errInvalidStops("buy take profit %v must be above %v", tp, ref)
		}
		return nil
	}
	if sl != 0 && sl <= ref {
		return errInvalidStops("sell stop loss %v must be above %v", sl, ref)
	}
	if tp != 0 && tp >= ref {
		return errInvalidStops("sell take profit %v must be below %v", tp, ref)
	}
	return nil
}

// truncateComment cuts c to at most broker.MaxCommentLen bytes without splitting a UTF-8
// sequence, so the result fits both a byte and a character limit.
func truncateComment(c string) string {
	if len(c) <= broker.MaxCommentLen {
		return c
	}
	c = c[:broker.MaxCommentLen]
	for len(c) > 0 && !utf8.ValidString(c) {
		c = c[:len(c)-1]
	}
	return c
}
