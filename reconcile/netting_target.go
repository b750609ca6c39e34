package reconcile

import (
	"fmt"
	"math"
	"slices"

	"github.com/snapcopier/copier/broker"
)

// planSymbol drives the link's position on one symbol to the net of its shares.
func (p *planner) planSymbol(ns *netSymbol) {
	for _, d := range ns.dups {
		p.act(closeAction(d, 0, ReasonDuplicate))
	}
	if ns.foreign {
		return
	}
	slices.SortFunc(ns.shares, func(a, b share) int { return byAge(a.m, b.m) })
	spec, hasSpec := p.followerSpec(ns.name)
	cur := 0.0
	if ns.pos != nil {
		cur = float64(ns.pos.Side) * ns.pos.Volume
	}
	if len(ns.shares) == 0 {
		if ns.pos != nil {
			p.act(closeAction(*ns.pos, p.eventTicket(), ReasonMasterClosed))
		}
		return
	}
	rules, why, detail := lotRulesFor(spec, p.s.Sizing)
	if !hasSpec || why != 0 {
		for _, s := range ns.shares {
			p.skip(Skip{MasterTicket: s.m.Ticket, Symbol: s.m.Symbol, Reason: SkipSymbolSpec, Detail: detail})
		}
		return
	}

	ns.spec, ns.rules = spec, rules
	p.adoptShares(ns, cur)
	target := p.netTarget(ns.shares, rules)
	// A share of unknown ratio that sizing cannot give one is left out of the map (it
	// would be tracked as unknown again on every plan) and adds nothing to the net.
	ns.track = ns.track[:0]
	for _, s := range ns.shares {
		if positive(s.ratio) {
			ns.track = append(ns.track, Tracked{MasterTicket: s.m.Ticket, Ratio: s.ratio})
		}
	}
	side := sideOf(target)
	lead := leadShare(ns.shares, side)

	if rules.same(target, cur) {
		var at int64
		if ns.pos != nil {
			at = ns.pos.Ticket
			p.fixNetStops(ns, spec, lead, ns.pos.OpenPrice)
		}
		p.trackFresh(ns, at)
		return
	}
	// A Close keeps its shares tracked, flat (FollowerTicket 0): they are still copied,
	// their net is just zero, and an Open that follows re-points them.
	netClose := Action{}
	if ns.pos != nil {
		netClose = closeAction(*ns.pos, p.eventTicket(), ReasonNetTarget)
		netClose.Track = ns.track
	}
	switch {
	case ns.pos == nil:
		p.netOpen(ns, lead, 0, target)
	case target == 0:
		p.act(netClose)
	case sideOf(cur) != side:
		p.act(netClose)
		p.netOpen(ns, lead, 0, target)
	case math.Abs(target) > math.Abs(cur):
		p.netOpen(ns, firstFresh(ns.shares, side, lead), cur, target)
	default:
		d := roundToStep(math.Abs(cur)-math.Abs(target), rules.step)
		if d < spec.MinLot {
			p.skip(Skip{MasterTicket: p.eventTicket(), FollowerTicket: ns.pos.Ticket, Symbol: ns.name, Reason: SkipAdjustBelowMin,
				Detail: fmt.Sprintf("position %v, target %v: closing %v is below the minimum %v", cur, target, d, spec.MinLot)})
			p.trackFresh(ns, ns.pos.Ticket)
			return
		}
		p.act(Action{Kind: PartialClose, Reason: ReasonNetTarget, MasterTicket: p.eventTicket(), FollowerTicket: ns.pos.Ticket,
			Symbol: ns.name, Side: ns.pos.Side, Volume: d, Track: ns.track})
		p.fixNetStops(ns, spec, lead, ns.pos.OpenPrice)
	}
}

// netTarget is the signed net of the shares: rounded toward zero to the step, capped at the
// maximum (and max_lots_per_symbol), and 0 below the minimum unless force_min is set.
// force_min never lifts the target above max_lots_per_symbol: when the limit is below the
// minimum no position fits and the target is 0 (admitShares skips new master positions
// there, as hedging skips such a copy).
func (p *planner) netTarget(shares []share, rules lotRules) float64 {
	capAt, fits := p.netCap(rules)
	if !fits {
		return 0
	}
	n := netOf(shares)
	v := math.Min(RoundDownToStep(math.Abs(n), rules.step), capAt)
	if v < rules.min {
		if !p.s.Sizing.ForceMin || v == 0 {
			return 0
		}
		v = rules.min
	}
	return float64(sideOf(n)) * v
}

// netCap is the most a position of the link may hold on a symbol with rules: the maximum,
// lowered to max_lots_per_symbol (rounded down to the step). fits is false when that is
// below the minimum: no position fits under the limit, whatever force_min says.
func (p *planner) netCap(rules lotRules) (capAt float64, fits bool) {
	capAt = rules.max
	if l := p.s.Limits.MaxLotsPerSymbol; l > 0 {
		capAt = math.Min(capAt, RoundDownToStep(l, rules.step))
	}
	return capAt, capAt >= rules.min
}

// netOpen opens (from flat: cur 0) or adds to the symbol's position to reach the signed
// target, for share by. The stops are the lead share's.
func (p *planner) netOpen(ns *netSymbol, by share, cur, target float64) {
	spec, side := ns.spec, sideOf(target)
	volume := roundToStep(math.Abs(target)-math.Abs(cur), ns.rules.step)
	lead := leadShare(ns.shares, side)
	if volume < spec.MinLot {
		p.skip(Skip{MasterTicket: by.m.Ticket, Symbol: ns.name, Reason: SkipAdjustBelowMin,
			Detail: fmt.Sprintf("position %v, target %v: adding %v is below the minimum %v", cur, target, volume, spec.MinLot)})
		var at int64
		if ns.pos != nil {
			at = ns.pos.Ticket
		}
		p.trackFresh(ns, at)
		return
	}
	if !spec.TradeAllowed {
		p.skip(Skip{MasterTicket: by.m.Ticket, Symbol: ns.name, Reason: SkipTradeDisabled,
			Detail: fmt.Sprintf("follower symbol %s is not tradable", ns.name)})
		return
	}
	price := expectedPrice(spec, side, lead.m.OpenPrice)
	base := price
	var onTicket int64
	if cur != 0 && ns.pos != nil {
		base = (math.Abs(cur)*ns.pos.OpenPrice + volume*price) / (math.Abs(cur) + volume)
		onTicket = ns.pos.Ticket
	}
	_, msl, mtp := copySide(p.s, lead.m)
	sl, tp := wantStops(p.s.Stops, spec, side, msl, mtp, base)
	reason := ReasonNetTarget
	if by.fresh && cur == 0 {
		reason = ReasonCopyMissing
	}
	track := ns.track
	if cur == 0 && ns.pos != nil {
		// The position was closed to open the other side: the shares of unknown ratio
		// that hold none of it move to the new position too (ratio still unknown), or
		// their entries would point at the closed one, as if the user had closed it.
		track = slices.Clone(track)
		for _, s := range ns.shares {
			if s.adopt && !positive(s.ratio) {
				track = append(track, Tracked{MasterTicket: s.m.Ticket})
			}
		}
	}
	p.act(Action{Kind: Open, Reason: reason, MasterTicket: by.m.Ticket, FollowerTicket: onTicket,
		Symbol: ns.name, Side: side, Volume: volume, SL: sl, TP: tp,
		Magic: p.in.Link.Magic, Comment: Marker(by.m.Ticket), Price: price, Track: track})
}

// trackFresh tracks the new, adopted and stale shares at the position (0: flat) that
// carries them without an order: the net is what it should be, or off by less than can be
// traded. A stale entry left pointing at 0 would otherwise survive a user's close of the
// position and reopen its share.
func (p *planner) trackFresh(ns *netSymbol, at int64) {
	for _, s := range ns.shares {
		if (s.fresh || s.stale) && positive(s.ratio) {
			p.track(s.m.Ticket, at, s.ratio)
		}
	}
}

// fixNetStops modifies the position's SL/TP when they differ from what the lead share wants.
func (p *planner) fixNetStops(ns *netSymbol, spec broker.SymbolSpec, lead share, base float64) {
	if lead.side != ns.pos.Side {
		return
	}
	_, msl, mtp := copySide(p.s, lead.m)
	sl, tp := wantStops(p.s.Stops, spec, lead.side, msl, mtp, base)
	if !samePrice(ns.pos.SL, sl, spec) || !samePrice(ns.pos.TP, tp, spec) {
		if detail := passedStop(spec, lead.side, sl, tp); detail != "" {
			p.skip(Skip{MasterTicket: lead.m.Ticket, FollowerTicket: ns.pos.Ticket, Symbol: ns.name, Reason: SkipStopPassed, Detail: "stops not moved: " + detail})
			return
		}
		p.act(Action{Kind: Modify, Reason: ReasonStops, MasterTicket: lead.m.Ticket, FollowerTicket: ns.pos.Ticket,
			Symbol: ns.name, Side: ns.pos.Side, Volume: ns.pos.Volume, SL: sl, TP: tp})
	}
}

// leaves is the signed position the plan leaves on the symbol when planSymbol drives cur to
// target: target, or what is left where the change cannot be traded (a change below the
// symbol's minimum volume, an open on a symbol that is not tradable).
func (ns *netSymbol) leaves(cur, target float64) float64 {
	switch {
	case ns.rules.same(target, cur):
		return cur
	case target == 0:
		return 0
	case cur == 0 || sideOf(cur) != sideOf(target): // an open from flat, after a close
		if !ns.spec.TradeAllowed {
			return 0
		}
		return target
	case roundToStep(math.Abs(math.Abs(target)-math.Abs(cur)), ns.rules.step) < ns.spec.MinLot:
		return cur // adjust_below_min
	case math.Abs(target) > math.Abs(cur) && !ns.spec.TradeAllowed:
		return cur
	}
	return target
}

// leadShare is the oldest share on side (its master's stops and marker go to the net
// position); the oldest share when none is on side.
func leadShare(shares []share, side broker.Side) share {
	for _, s := range shares {
		if s.side == side {
			return s
		}
	}
	return shares[0]
}

// firstFresh is the oldest new share on side, else lead: the master position an addition
// serves.
func firstFresh(shares []share, side broker.Side, lead share) share {
	for _, s := range shares {
		if s.fresh && s.side == side {
			return s
		}
	}
	return lead
}

// sideOf is the side of a signed volume (Buy for ≥ 0).
func sideOf(v float64) broker.Side {
	if v < 0 {
		return broker.Sell
	}
	return broker.Buy
}

// eventTicket is the master ticket of the event path, 0 for a full plan.
func (p *planner) eventTicket() int64 {
	if p.sc.all {
		return 0
	}
	return p.sc.ticket
}
