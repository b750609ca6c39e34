package reconcile

import "fmt"

// SkipReason is why the planner did not act on a position.
type SkipReason int8

const (
	// SkipFilteredSymbol: the master symbol is not included, or is excluded.
	SkipFilteredSymbol SkipReason = iota + 1
	// SkipFilteredSide: the master side is not copied.
	SkipFilteredSide
	// SkipFilteredMagic: the master magic number is not copied.
	SkipFilteredMagic
	// SkipTooOld: the master position is older than the opening window.
	SkipTooOld
	// SkipPriceDeviation: the follower's price is too far from the master's open price.
	SkipPriceDeviation
	// SkipSymbolNotFound: the follower has no symbol the master symbol maps to.
	SkipSymbolNotFound
	// SkipSymbolSpec: the follower symbol's volume limits are unusable.
	SkipSymbolSpec
	// SkipContractSize: a contract size needed for sizing is unknown.
	SkipContractSize
	// SkipTradeDisabled: the follower symbol is not tradable.
	SkipTradeDisabled
	// SkipNoStopLoss: risk_percent sizing and the position has no stop-loss.
	SkipNoStopLoss
	// SkipNoBalance: a balance or equity needed for sizing is not positive.
	SkipNoBalance
	// SkipVolumeBelowMin: the copy sizes below the minimum volume (and force_min is off).
	SkipVolumeBelowMin
	// SkipLotBounds: the link's min_lot/max_lot and the symbol's limits admit no volume.
	SkipLotBounds
	// SkipMaxOpenCopies: the link already has limits.max_open_copies copies open.
	SkipMaxOpenCopies
	// SkipMaxLotsPerSymbol: no room is left under limits.max_lots_per_symbol.
	SkipMaxLotsPerSymbol
	// SkipCopyClosed: the copy was closed on the follower (by hand, SL/TP, stop out) while
	// the master position is open; it is not opened again.
	SkipCopyClosed
	// SkipUnidentified: a follower position carries the link's magic number but neither a
	// ticket map entry nor a readable marker; it is left alone.
	SkipUnidentified
	// SkipNettingSymbolBusy: on a netting follower the symbol's one position belongs to
	// someone else (a manual trade or another link).
	SkipNettingSymbolBusy
	// SkipAdjustBelowMin: the copy should shrink (or, on a netting follower, grow) by less
	// than the minimum volume, which the server cannot trade.
	SkipAdjustBelowMin
	// SkipInvalidLink: the link's settings are invalid or its magic number is 0; nothing is
	// planned.
	SkipInvalidLink
	// SkipAccountMode: the follower's account mode is unknown; nothing is planned.
	SkipAccountMode
	// SkipWrongAccount: the event is from another account than the master's.
	SkipWrongAccount
	// SkipRestricted: a protection (stop-out or close-only mode) forbids new copies
	// (Input.Restrict).
	SkipRestricted
	// SkipEquityUnknown: the sizing mode needs a balance or equity the trade server does
	// not say (broker.AccountInfo.EquityUnknown, the master's or the follower's).
	SkipEquityUnknown
	// SkipQuoteStale: a copy later than QuoteMaxAge under a price-deviation bound, and the
	// follower's quote is older than QuoteMaxAge: the engine reads its symbols again and
	// plans with a current quote (Result.NeedsQuote).
	SkipQuoteStale
	// SkipStopPassed: the follower's price has already passed the copy's stop-loss or
	// take-profit (a buy closes at the Bid, a sell at the Ask); the trade server would
	// refuse the order (invalid stops), and at that price the copy would close at once.
	SkipStopPassed
)

// String returns the reason's snake_case name.
func (r SkipReason) String() string {
	switch r {
	case SkipFilteredSymbol:
		return "filtered_symbol"
	case SkipFilteredSide:
		return "filtered_side"
	case SkipFilteredMagic:
		return "filtered_magic"
	case SkipTooOld:
		return "too_old"
	case SkipPriceDeviation:
		return "price_deviation"
	case SkipSymbolNotFound:
		return "symbol_not_found"
	case SkipSymbolSpec:
		return "symbol_spec"
	case SkipContractSize:
		return "contract_size"
	case SkipTradeDisabled:
		return "trade_disabled"
	case SkipNoStopLoss:
		return "no_stop_loss"
	case SkipNoBalance:
		return "no_balance"
	case SkipVolumeBelowMin:
		return "volume_below_min"
	case SkipLotBounds:
		return "lot_bounds"
	case SkipMaxOpenCopies:
		return "max_open_copies"
	case SkipMaxLotsPerSymbol:
		return "max_lots_per_symbol"
	case SkipCopyClosed:
		return "copy_closed"
	case SkipUnidentified:
		return "unidentified"
	case SkipNettingSymbolBusy:
		return "netting_symbol_busy"
	case SkipAdjustBelowMin:
		return "adjust_below_min"
	case SkipInvalidLink:
		return "invalid_link"
	case SkipAccountMode:
		return "account_mode"
	case SkipWrongAccount:
		return "wrong_account"
	case SkipRestricted:
		return "restricted"
	case SkipEquityUnknown:
		return "equity_unknown"
	case SkipQuoteStale:
		return "quote_stale"
	case SkipStopPassed:
		return "stop_passed"
	}
	return fmt.Sprintf("SkipReason(%d)", int8(r))
}

// Skip records a position the planner left alone, and why. Skips are informational (status,
// logs, the console); they are not actions and a plan with only skips is converged.
type Skip struct {
	// MasterTicket is the master position (0 for a follower position or the whole plan).
	MasterTicket int64
	// FollowerTicket is the follower position concerned, if any.
	FollowerTicket int64
	// Symbol is the master symbol (or the follower's, for a follower position).
	Symbol string
	// Reason is why.
	Reason SkipReason
	// Detail gives the numbers behind the reason ("age 75s > 60s").
	Detail string
}

// String describes the skip for logs.
func (s Skip) String() string {
	return fmt.Sprintf("skip master %d follower %d %s: %s (%s)", s.MasterTicket, s.FollowerTicket, s.Symbol, s.Reason, s.Detail)
}
