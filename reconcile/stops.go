package reconcile

import (
	"fmt"
	"math"

	"github.com/snapcopier/copier/broker"
)

// StopsMode is the SL/TP policy of a link. It marshals as a string.
type StopsMode int8

const (
	// StopsCopy gives each copy the master's stop-loss and take-profit (swapped when
	// reversing), and follows the master's changes.
	StopsCopy StopsMode = iota + 1
	// StopsNone opens copies without SL/TP and removes any they get.
	StopsNone
	// StopsFixed sets SL and TP at fixed distances, in follower points, from the copy's
	// open price (0 = none for that side).
	StopsFixed
)

// String returns "copy", "none" or "fixed".
func (m StopsMode) String() string {
	switch m {
	case StopsCopy:
		return "copy"
	case StopsNone:
		return "none"
	case StopsFixed:
		return "fixed"
	}
	return fmt.Sprintf("StopsMode(%d)", int8(m))
}

// Valid reports whether m is one of the defined modes.
func (m StopsMode) Valid() bool { return m >= StopsCopy && m <= StopsFixed }

// MarshalText writes the mode's name.
func (m StopsMode) MarshalText() ([]byte, error) {
	if !m.Valid() {
		return nil, fmt.Errorf("invalid stops mode %d", int8(m))
	}
	return []byte(m.String()), nil
}

// UnmarshalText parses "copy", "none" or "fixed".
func (m *StopsMode) UnmarshalText(b []byte) error {
	for v := StopsCopy; v <= StopsFixed; v++ {
		if v.String() == string(b) {
			*m = v
			return nil
		}
	}
	return fmt.Errorf("unknown stops mode %q (want copy, none or fixed)", b)
}

// Stops is the SL/TP policy of a link.
type Stops struct {
	// Mode is copy (default), none or fixed.
	Mode StopsMode `json:"mode"`
	// SLPoints is the stop-loss distance in follower points in mode fixed (0 = no SL).
	SLPoints float64 `json:"sl_points,omitempty"`
	// TPPoints is the take-profit distance in follower points in mode fixed (0 = no TP).
	TPPoints float64 `json:"tp_points,omitempty"`
}

func (s Stops) validate(fe *fieldErrors) {
	if !s.Mode.Valid() {
		fe.add("stops.mode", "required: one of copy, none, fixed")
	}
	if !nonNegative(s.SLPoints) {
		fe.add("stops.sl_points", "must be ≥ 0 (got %v)", s.SLPoints)
	}
	if !nonNegative(s.TPPoints) {
		fe.add("stops.tp_points", "must be ≥ 0 (got %v)", s.TPPoints)
	}
	if s.Mode == StopsFixed && s.SLPoints == 0 && s.TPPoints == 0 {
		fe.add("stops.sl_points", "mode fixed needs sl_points or tp_points > 0 (use mode none for no stops)")
	}
}

// Reverse returns the reversed copy of a position's side and stops: the opposite side, with
// stop-loss and take-profit swapped (the master's take-profit is where a reversed copy
// loses). Reverse(Reverse(x)) == x.
func Reverse(side broker.Side, sl, tp float64) (broker.Side, float64, float64) {
	return side.Opposite(), tp, sl
}

// copySide returns the follower side and the master's SL/TP as seen from that side.
func copySide(s Settings, m broker.Position) (broker.Side, float64, float64) {
	if s.Reverse {
		return Reverse(m.Side, m.SL, m.TP)
	}
	return m.Side, m.SL, m.TP
}

// wantStops returns the SL/TP a copy on side should carry. masterSL and masterTP are the
// master's stops as seen from the copy's side (after Reverse); base is the copy's open
// price (fixed mode). Prices are rounded to the follower symbol's digits.
func wantStops(st Stops, spec broker.SymbolSpec, side broker.Side, masterSL, masterTP, base float64) (sl, tp float64) {
	switch st.Mode {
	case StopsCopy:
		return roundPrice(masterSL, spec), roundPrice(masterTP, spec)
	case StopsFixed:
		pt := point(spec)
		if st.SLPoints > 0 {
			sl = roundPrice(base-float64(side)*st.SLPoints*pt, spec)
		}
		if st.TPPoints > 0 {
			tp = roundPrice(base+float64(side)*st.TPPoints*pt, spec)
		}
		if sl < 0 {
			sl = 0
		}
		if tp < 0 {
			tp = 0
		}
		return sl, tp
	}
	return 0, 0
}

// point returns the symbol's point, derived from Digits when Point is unset.
func point(spec broker.SymbolSpec) float64 {
	if spec.Point > 0 {
		return spec.Point
	}
	if spec.Digits > 0 {
		return math.Pow10(-spec.Digits)
	}
	return 0
}

// roundPrice rounds p to the symbol's digits (unchanged when digits are unknown). 0 stays 0.
func roundPrice(p float64, spec broker.SymbolSpec) float64 {
	if p == 0 || spec.Digits <= 0 {
		return p
	}
	f := math.Pow10(spec.Digits)
	return math.Round(p*f) / f
}

// samePrice reports whether two stop prices are equal within half a point (exactly equal
// when the point is unknown); 0 (none) equals only 0.
func samePrice(a, b float64, spec broker.SymbolSpec) bool {
	if a == 0 || b == 0 {
		return a == b
	}
	tol := point(spec) / 2
	if tol == 0 {
		tol = 1e-12
	}
	return math.Abs(a-b) < tol
}
