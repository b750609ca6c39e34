package reconcile

import (
	"fmt"

	"github.com/snapcopier/copier/broker"
)

// SizeInput is what sizing one copy needs.
type SizeInput struct {
	// Sizing is the link's sizing settings.
	Sizing Sizing
	// MasterVolume is the master position's volume in master lots.
	MasterVolume float64
	// Master and Follower are the two accounts (balance and equity).
	Master, Follower broker.AccountInfo
	// MasterSpec and FollowerSpec are the master's and the follower's symbol.
	MasterSpec, FollowerSpec broker.SymbolSpec
	// StopDistance is the price distance between the copy's entry and the stop-loss that
	// bounds its loss; risk_percent needs it (≤ 0: none, the copy is skipped).
	StopDistance float64
}

// Size returns the follower volume of a copy: the mode's formula (see SizingMode), then
// FitVolume. It returns 0 and the reason when the copy is skipped.
//
// The formulas, with V the master volume, a the contract alignment (master contract size ÷
// follower contract size when AlignContractSize is set, else 1) and k the multiplier:
//
//	fixed_lot       FixedLot
//	lot_multiplier  V × k × a
//	balance_ratio   V × follower balance ÷ master balance × k × a
//	equity_ratio    V × follower equity ÷ master equity × k × a
//	risk_percent    follower equity × RiskPercent/100 ÷ (StopDistance × follower contract size)
//
// risk_percent counts the loss in the symbol's quote currency and so assumes that it is the
// follower account's currency (true for XXXUSD symbols on USD accounts); other pairs need a
// RiskPercent scaled by the conversion rate.
func Size(in SizeInput) (float64, SkipReason) {
	v, why, _ := size(in)
	return v, why
}

// size is Size with a human-readable detail for skips.
func size(in SizeInput) (float64, SkipReason, string) {
	raw, why, detail := rawSize(in)
	if why != 0 {
		return 0, why, detail
	}
	r, why, detail := lotRulesFor(in.FollowerSpec, in.Sizing)
	if why != 0 {
		return 0, why, detail
	}
	return r.fit(raw, in.Sizing.ForceMin)
}

// rawSize is the mode's formula before the lot rules.
func rawSize(in SizeInput) (float64, SkipReason, string) {
	s := in.Sizing
	switch s.Mode {
	case SizeFixedLot:
		return s.FixedLot, 0, ""
	case SizeRiskPercent:
		if !positive(in.StopDistance) {
			return 0, SkipNoStopLoss, "risk_percent sizing needs a stop-loss"
		}
		if in.Follower.EquityUnknown {
			return 0, SkipEquityUnknown, "risk_percent sizing needs the follower's equity: equity unknown"
		}
		if !positive(in.Follower.Equity) {
			return 0, SkipNoBalance, fmt.Sprintf("follower equity %v", in.Follower.Equity)
		}
		if !positive(in.FollowerSpec.ContractSize) {
			return 0, SkipContractSize, fmt.Sprintf("follower symbol %s has contract size %v", in.FollowerSpec.Name, in.FollowerSpec.ContractSize)
		}
		risk := in.Follower.Equity * s.RiskPercent / 100
		return risk / (in.StopDistance * in.FollowerSpec.ContractSize), 0, ""
	}
	align := 1.0
	if s.AlignContractSize {
		mc, fc := in.MasterSpec.ContractSize, in.FollowerSpec.ContractSize
		if !positive(mc) || !positive(fc) {
			return 0, SkipContractSize, fmt.Sprintf("contract sizes unknown (master %s %v, follower %s %v)", in.MasterSpec.Name, mc, in.FollowerSpec.Name, fc)
		}
		align = mc / fc
	}
	v := in.MasterVolume * s.Multiplier * align
	switch s.Mode {
	case SizeLotMultiplier:
	case SizeBalanceRatio:
		if why := unknownEquity(in, "balance_ratio", "balance"); why != "" {
			return 0, SkipEquityUnknown, why
		}
		if !positive(in.Master.Balance) || !positive(in.Follower.Balance) {
			return 0, SkipNoBalance, fmt.Sprintf("balances master %v, follower %v", in.Master.Balance, in.Follower.Balance)
		}
		v *= in.Follower.Balance / in.Master.Balance
	case SizeEquityRatio:
		if why := unknownEquity(in, "equity_ratio", "equity"); why != "" {
			return 0, SkipEquityUnknown, why
		}
		if !positive(in.Master.Equity) || !positive(in.Follower.Equity) {
			return 0, SkipNoBalance, fmt.Sprintf("equities master %v, follower %v", in.Master.Equity, in.Follower.Equity)
		}
		v *= in.Follower.Equity / in.Master.Equity
	default:
		return 0, SkipInvalidLink, fmt.Sprintf("sizing mode %v", s.Mode)
	}
	return v, 0, ""
}

// unknownEquity is the detail of a ratio mode's skip when the master's or the follower's
// balance and equity are unknown (broker.AccountInfo.EquityUnknown), "" when both are
// known: an unknown one is never read as 0.
func unknownEquity(in SizeInput, mode, what string) string {
	var who string
	switch {
	case in.Master.EquityUnknown && in.Follower.EquityUnknown:
		who = "master's and the follower's"
	case in.Master.EquityUnknown:
		who = "master's"
	case in.Follower.EquityUnknown:
		who = "follower's"
	default:
		return ""
	}
	return fmt.Sprintf("%s sizing needs the %s %s: equity unknown", mode, who, what)
}
