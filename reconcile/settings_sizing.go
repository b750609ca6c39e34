package reconcile

import (
	"fmt"
	"math"
)

// SizingMode selects how a copy's volume is computed. It marshals as a string.
type SizingMode int8

const (
	// SizeFixedLot opens every copy with Sizing.FixedLot follower lots.
	SizeFixedLot SizingMode = iota + 1
	// SizeLotMultiplier opens master volume × Sizing.Multiplier (1 = same volume).
	SizeLotMultiplier
	// SizeBalanceRatio opens master volume × follower balance ÷ master balance ×
	// Sizing.Multiplier.
	SizeBalanceRatio
	// SizeEquityRatio opens master volume × follower equity ÷ master equity ×
	// Sizing.Multiplier.
	SizeEquityRatio
	// SizeRiskPercent risks Sizing.RiskPercent of the follower's equity between the copy's
	// entry and its stop-loss (the master's, when the copy carries none). A position is not
	// copied when neither the copy nor the master position has a stop-loss.
	SizeRiskPercent
)

// String returns the JSON name of the mode.
func (m SizingMode) String() string {
	switch m {
	case SizeFixedLot:
		return "fixed_lot"
	case SizeLotMultiplier:
		return "lot_multiplier"
	case SizeBalanceRatio:
		return "balance_ratio"
	case SizeEquityRatio:
		return "equity_ratio"
	case SizeRiskPercent:
		return "risk_percent"
	}
	return fmt.Sprintf("SizingMode(%d)", int8(m))
}

// Valid reports whether m is one of the defined modes.
func (m SizingMode) Valid() bool { return m >= SizeFixedLot && m <= SizeRiskPercent }

// ParseSizingMode returns the mode named s (as String writes it).
func ParseSizingMode(s string) (SizingMode, error) {
	for m := SizeFixedLot; m <= SizeRiskPercent; m++ {
		if m.String() == s {
			return m, nil
		}
	}
	return 0, fmt.Errorf("unknown sizing mode %q (want fixed_lot, lot_multiplier, balance_ratio, equity_ratio or risk_percent)", s)
}

// MarshalText writes the mode's name; an undefined mode is an error.
func (m SizingMode) MarshalText() ([]byte, error) {
	if !m.Valid() {
		return nil, fmt.Errorf("invalid sizing mode %d", int8(m))
	}
	return []byte(m.String()), nil
}

// UnmarshalText parses a mode name.
func (m *SizingMode) UnmarshalText(b []byte) error {
	v, err := ParseSizingMode(string(b))
	if err != nil {
		return err
	}
	*m = v
	return nil
}

// Sizing decides the follower volume of a copy. The result is capped at the maximum,
// rounded down to the follower symbol's lot step, and skipped when below the minimum
// unless ForceMin is set (see FitVolume).
type Sizing struct {
	// Mode selects the formula. Default lot_multiplier.
	Mode SizingMode `json:"mode"`
	// FixedLot is the volume of every copy in fixed_lot mode, in follower lots.
	FixedLot float64 `json:"fixed_lot,omitempty"`
	// Multiplier scales lot_multiplier, balance_ratio and equity_ratio. Default 1.
	Multiplier float64 `json:"multiplier"`
	// RiskPercent is the share of follower equity (0 < p ≤ 100) risked per copy in
	// risk_percent mode.
	RiskPercent float64 `json:"risk_percent,omitempty"`
	// AlignContractSize converts master lots into follower lots of equal exposure when the
	// two symbols' contract sizes differ (master lots × master contract size ÷ follower
	// contract size). It applies to lot_multiplier, balance_ratio and equity_ratio; fixed_lot
	// is already in follower lots and risk_percent uses the follower's contract size.
	// Default true.
	AlignContractSize bool `json:"align_contract_size"`
	// MinLot raises the follower symbol's minimum volume (0 = the symbol's own minimum).
	MinLot float64 `json:"min_lot,omitempty"`
	// MaxLot lowers the follower symbol's maximum volume (0 = the symbol's own maximum).
	// Larger copies are capped, not skipped.
	MaxLot float64 `json:"max_lot,omitempty"`
	// ForceMin opens the minimum volume instead of skipping a copy that sizes below it.
	ForceMin bool `json:"force_min,omitempty"`
}

func (s Sizing) validate(fe *fieldErrors) {
	if !s.Mode.Valid() {
		fe.add("sizing.mode", "required: one of fixed_lot, lot_multiplier, balance_ratio, equity_ratio, risk_percent")
	}
	switch s.Mode {
	case SizeFixedLot:
		if !positive(s.FixedLot) {
			fe.add("sizing.fixed_lot", "must be > 0 in mode fixed_lot (got %v)", s.FixedLot)
		}
	case SizeLotMultiplier, SizeBalanceRatio, SizeEquityRatio:
		if !positive(s.Multiplier) {
			fe.add("sizing.multiplier", "must be > 0 in mode %s (got %v)", s.Mode, s.Multiplier)
		}
	}
	// Sanity bounds, whatever the mode: no real account trades more, and a value beyond
	// them is a typo that would size every copy at the symbol's maximum.
	if s.FixedLot > MaxLots {
		fe.add("sizing.fixed_lot", "must be ≤ %v lots (got %v)", MaxLots, s.FixedLot)
	}
	if s.Multiplier > MaxMultiplier {
		fe.add("sizing.multiplier", "must be ≤ %v (got %v)", MaxMultiplier, s.Multiplier)
	}
	if s.MinLot > MaxLots {
		fe.add("sizing.min_lot", "must be ≤ %v lots (got %v)", MaxLots, s.MinLot)
	}
	if s.MaxLot > MaxLots {
		fe.add("sizing.max_lot", "must be ≤ %v lots (got %v)", MaxLots, s.MaxLot)
	}
	switch s.Mode {
	case SizeRiskPercent:
		if !positive(s.RiskPercent) || s.RiskPercent > 100 {
			fe.add("sizing.risk_percent", "must be > 0 and ≤ 100 in mode risk_percent (got %v)", s.RiskPercent)
		}
	}
	if !nonNegative(s.MinLot) {
		fe.add("sizing.min_lot", "must be ≥ 0 (got %v)", s.MinLot)
	}
	if !nonNegative(s.MaxLot) {
		fe.add("sizing.max_lot", "must be ≥ 0 (got %v)", s.MaxLot)
	}
	if s.MinLot > 0 && s.MaxLot > 0 && s.MinLot > s.MaxLot {
		fe.add("sizing.min_lot", "must not exceed sizing.max_lot (%v > %v)", s.MinLot, s.MaxLot)
	}
}

// Sanity bounds of sizing.
const (
	// MaxLots bounds fixed_lot, min_lot and max_lot.
	MaxLots = 1000
	// MaxMultiplier bounds multiplier.
	MaxMultiplier = 1000
)

// positive reports whether v is a finite number > 0.
func positive(v float64) bool { return v > 0 && !math.IsInf(v, 0) }

// nonNegative reports whether v is a finite number ≥ 0.
func nonNegative(v float64) bool { return v >= 0 && !math.IsInf(v, 0) }
