package reconcile

import (
	"fmt"
	"math"
	"time"

	"github.com/snapcopier/copier/broker"
)

// candidate is a master position that passed every check for a new copy.
type candidate struct {
	m      broker.Position
	symbol string // follower symbol
	spec   broker.SymbolSpec
	rules  lotRules
	side   broker.Side // the copy's side
	sl, tp float64     // the copy's stops at price
	price  float64     // expected fill price
	worst  float64     // the worst fill the deviation bound accepts (0: none)
	volume float64
}

// ratio returns the copy ratio the candidate opens with.
func (c candidate) ratio() float64 { return c.volume / c.m.Volume }

// evaluate runs the checks for a new copy of m in order (filters, opening window, symbol,
// tradability, price deviation, sizing) and returns the candidate, or records the skip and
// returns false. Limits are the caller's.
func (p *planner) evaluate(m broker.Position) (candidate, bool) {
	skip := func(why SkipReason, format string, args ...any) (candidate, bool) {
		p.skip(Skip{MasterTicket: m.Ticket, Symbol: m.Symbol, Reason: why, Detail: fmt.Sprintf(format, args...)})
		return candidate{}, false
	}
	if r := p.in.Restrict; r != Unrestricted {
		return skip(SkipRestricted, "%s", r)
	}
	if why := p.s.Filters.check(m, p.s.Symbols.Base(m.Symbol)); why != 0 {
		return skip(why, "%s %s magic %d", m.Side, m.Symbol, m.Magic)
	}
	if !(m.Volume > 0) || !m.Side.Valid() {
		return skip(SkipVolumeBelowMin, "master position has volume %v side %d", m.Volume, m.Side)
	}
	if maxAge := time.Duration(p.s.Window.MaxAgeSeconds) * time.Second; maxAge > 0 {
		if m.OpenTime.IsZero() {
			return skip(SkipTooOld, "open time unknown")
		}
		if age := p.in.masterAge(&m); age > maxAge {
			return skip(SkipTooOld, "age %s > %s", age.Round(time.Second), maxAge)
		}
	}
	sym, ok := p.resolve(m)
	if !ok {
		return skip(SkipSymbolNotFound, "no follower symbol for %s", m.Symbol)
	}
	spec, _ := p.followerSpec(sym)
	if !spec.TradeAllowed {
		return skip(SkipTradeDisabled, "follower symbol %s is not tradable", sym)
	}
	rules, why, detail := lotRulesFor(spec, p.s.Sizing)
	if why != 0 {
		return skip(why, "%s", detail)
	}
	side, msl, mtp := copySide(p.s, m)
	price := expectedPrice(spec, side, m.OpenPrice)
	var worst float64
	if maxDev := p.s.Window.MaxDeviationPoints; maxDev > 0 && point(spec) > 0 {
		worst = worstPrice(side, m.OpenPrice, maxDev*point(spec))
		if quoted(spec, side) {
			if dev := math.Abs(price-m.OpenPrice) / point(spec); dev > maxDev+1e-9 {
				return skip(SkipPriceDeviation, "%s %v vs master open %v: %.1f points > %v", sym, price, m.OpenPrice, dev, maxDev)
			}
		} else if late := p.in.masterAge(&m); p.quotesStale && late > QuoteMaxAge && quoted(p.in.Follower.Symbols[sym], side) {
			// A late copy's price must be checked against a current quote: read one.
			return skip(SkipQuoteStale, "%s: copy %s after the master's open, quote read %s ago", sym, late.Round(time.Millisecond), p.in.Now.Sub(p.in.Follower.QuotesAt).Round(time.Millisecond))
		}
	}
	sl, tp := wantStops(p.s.Stops, spec, side, msl, mtp, price)
	if detail := passedStop(spec, side, sl, tp); detail != "" {
		return skip(SkipStopPassed, "%s %s", sym, detail)
	}
	masterSpec := p.in.Master.Symbols[m.Symbol]
	if masterSpec.Name == "" {
		masterSpec.Name = m.Symbol
	}
	vol, why, detail := size(SizeInput{
		Sizing:       p.s.Sizing,
		MasterVolume: m.Volume,
		Master:       p.in.Master.Info,
		Follower:     p.in.Follower.Info,
		MasterSpec:   masterSpec,
		FollowerSpec: spec,
		StopDistance: stopDistance(price, sl, m),
	})
	if why != 0 {
		return skip(why, "%s", detail)
	}
	return candidate{m: m, symbol: sym, spec: spec, rules: rules, side: side, sl: sl, tp: tp, price: price, worst: worst, volume: vol}, true
}

// quoted reports whether the follower's price for opening side is known.
func quoted(spec broker.SymbolSpec, side broker.Side) bool {
	if side == broker.Buy {
		return spec.Ask > 0
	}
	return spec.Bid > 0
}

// passedStop describes how the follower's price has already passed a stop of a copy of
// side ("" when it has not, or the closing price is unknown): a buy closes at the Bid and
// needs SL < Bid < TP, a sell at the Ask and needs TP < Ask < SL, as MetaTrader checks
// them (0: no stop). Sending such a copy only earns a refusal (invalid stops); at this
// price the copy would close as soon as it opened.
func passedStop(spec broker.SymbolSpec, side broker.Side, sl, tp float64) string {
	if side == broker.Buy {
		switch bid := spec.Bid; {
		case bid <= 0:
		case sl != 0 && sl >= bid:
			return fmt.Sprintf("buy copy's stop-loss %v at or above the Bid %v", sl, bid)
		case tp != 0 && tp <= bid:
			return fmt.Sprintf("buy copy's take-profit %v at or below the Bid %v", tp, bid)
		}
		return ""
	}
	switch ask := spec.Ask; {
	case ask <= 0:
	case sl != 0 && sl <= ask:
		return fmt.Sprintf("sell copy's stop-loss %v at or below the Ask %v", sl, ask)
	case tp != 0 && tp >= ask:
		return fmt.Sprintf("sell copy's take-profit %v at or above the Ask %v", tp, ask)
	}
	return ""
}

// expectedPrice is the price a market order on side would fill at: the follower's Ask for
// a buy, Bid for a sell, or fallback when the quote is unknown.
func expectedPrice(spec broker.SymbolSpec, side broker.Side, fallback float64) float64 {
	if side == broker.Buy && spec.Ask > 0 {
		return spec.Ask
	}
	if side == broker.Sell && spec.Bid > 0 {
		return spec.Bid
	}
	return fallback
}

// stopDistance is the price distance that bounds a copy's loss: from its entry to its own
// stop-loss, or, when the copy carries none, the master's own entry-to-stop distance. 0 when
// neither has a stop-loss.
func stopDistance(price, copySL float64, m broker.Position) float64 {
	if copySL != 0 {
		return math.Abs(price - copySL)
	}
	if m.SL != 0 {
		return math.Abs(m.OpenPrice - m.SL)
	}
	return 0
}

// openAction returns the Open action of a candidate with the given volume.
func (p *planner) openAction(c candidate, volume float64) Action {
	return Action{
		Kind: Open, Reason: ReasonCopyMissing, MasterTicket: c.m.Ticket,
		Symbol: c.symbol, Side: c.side, Volume: volume, SL: c.sl, TP: c.tp,
		Magic: p.in.Link.Magic, Comment: Marker(c.m.Ticket), Price: c.price, WorstPrice: c.worst,
		Track: []Tracked{{MasterTicket: c.m.Ticket, Ratio: volume / c.m.Volume}},
	}
}

// worstPrice is the worst fill a copy of side may get, dev (in price) from the master's
// open: the deviation bound, checked again by the trade server at the fill
// (broker.OpenRequest.WorstPrice), since the market moves between the plan's quote and
// the fill. 0 (no bound) where a sell's bound would not be a price.
func worstPrice(side broker.Side, masterOpen, dev float64) float64 {
	if side == broker.Buy {
		return masterOpen + dev
	}
	return max(masterOpen-dev, 0)
}
