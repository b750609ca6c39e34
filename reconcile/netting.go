package reconcile

import (
	"fmt"
	"math"
	"slices"

	"github.com/snapcopier/copier/broker"
)

// share is one master position carried by a netting follower's position.
type share struct {
	m     broker.Position
	side  broker.Side // the copy's side
	ratio float64     // follower lots per master lot
	fresh bool        // not in the ticket map yet (new or adopted)
}

// volume is the share's follower volume, signed by side.
func (s share) volume() float64 { return float64(s.side) * s.ratio * s.m.Volume }

// netSymbol is the link's state on one follower symbol of a netting follower.
type netSymbol struct {
	name    string
	pos     *broker.Position // the link's position (nil: flat)
	dups    []broker.Position
	foreign bool // a position of another magic holds the symbol
	shares  []share
}

// netting plans a netting follower: one position per symbol carries every copy on it.
func (p *planner) netting() {
	syms := p.netSymbols()
	entries := p.entriesByMaster()

	// Entries of closed master positions are done: their share leaves the net below.
	for _, e := range p.entries {
		if _, open := p.master[e.MasterTicket]; !open && p.inScope(e.MasterTicket) {
			p.res.Untrack = append(p.res.Untrack, e)
		}
	}

	// Shares carried already (ticket map, or the position's marker) count toward the limits
	// before any new one is admitted, whatever the scope.
	carried := 0
	var fresh []broker.Position
	for _, m := range p.masters {
		sym, ok := p.resolve(m)
		ns := syms[sym]
		if es := entries[m.Ticket]; len(es) > 0 {
			if ok && ns != nil && ns.foreign {
				p.skip(Skip{MasterTicket: m.Ticket, Symbol: m.Symbol, Reason: SkipNettingSymbolBusy,
					Detail: fmt.Sprintf("%s is held by a position of another magic number", sym)})
				continue
			}
			var at int64 // the link's position on the symbol; 0 when flat
			if ok && ns != nil && ns.pos != nil {
				at = ns.pos.Ticket
			}
			e, live := liveEntry(es, at)
			if !ok || !live {
				p.skip(Skip{MasterTicket: m.Ticket, FollowerTicket: e.FollowerTicket, Symbol: m.Symbol, Reason: SkipCopyClosed,
					Detail: fmt.Sprintf("copy #%d is no longer on the follower", e.FollowerTicket)})
				continue
			}
			if ns == nil {
				ns = &netSymbol{name: sym}
				syms[sym] = ns
			}
			side, _, _ := copySide(p.s, m)
			sh := share{m: m, side: side, ratio: e.Volume}
			if !positive(sh.ratio) {
				sh.ratio, sh.fresh = p.adoptRatio(m, ns), true
			}
			ns.shares = append(ns.shares, sh)
			carried++
			continue
		}
		if ok && ns != nil && ns.pos != nil && !ns.foreign {
			if t, ok := ParseMarker(ns.pos.Comment); ok && t == m.Ticket {
				side, _, _ := copySide(p.s, m)
				ns.shares = append(ns.shares, share{m: m, side: side, ratio: p.adoptRatio(m, ns), fresh: true})
				carried++
				continue
			}
		}
		// The event path plans the event's symbol as a whole: a missed copy on it is
		// opened too, so that the net target never leaves out a carried master position.
		if p.sc.all || (ok && sym == p.sc.symbol) {
			fresh = append(fresh, m)
		}
	}

	for _, m := range fresh {
		c, ok := p.evaluate(m)
		if !ok {
			continue
		}
		ns := syms[c.symbol]
		if ns == nil {
			ns = &netSymbol{name: c.symbol}
			syms[c.symbol] = ns
		}
		if ns.foreign {
			p.skip(Skip{MasterTicket: m.Ticket, Symbol: m.Symbol, Reason: SkipNettingSymbolBusy,
				Detail: fmt.Sprintf("%s is held by a position of another magic number", c.symbol)})
			continue
		}
		if l := p.s.Limits.MaxOpenCopies; l > 0 && carried >= l {
			p.skip(Skip{MasterTicket: m.Ticket, Symbol: m.Symbol, Reason: SkipMaxOpenCopies,
				Detail: fmt.Sprintf("%d master positions copied, limit %d", carried, l)})
			continue
		}
		// max_lots_per_symbol caps the net position (netTarget), not each share: a cap
		// per share would depend on the order shares arrive in.
		ns.shares = append(ns.shares, share{m: m, side: c.side, ratio: c.ratio(), fresh: true})
		carried++
	}

	names := make([]string, 0, len(syms))
	for name := range syms {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if ns := syms[name]; p.sc.all || name == p.sc.symbol {
			p.planSymbol(ns)
		}
	}
}

// netSymbols groups the follower's positions by symbol: the link's own (the oldest is the
// position, any other a duplicate) and whether another magic holds the symbol.
func (p *planner) netSymbols() map[string]*netSymbol {
	fs := slices.Clone(p.in.Follower.Positions)
	slices.SortFunc(fs, byAge)
	syms := make(map[string]*netSymbol)
	for i := range fs {
		f := fs[i]
		ns := syms[f.Symbol]
		if ns == nil {
			ns = &netSymbol{name: f.Symbol}
			syms[f.Symbol] = ns
		}
		switch {
		case f.Magic != p.in.Link.Magic:
			ns.foreign = true
		case ns.pos == nil:
			ns.pos = &fs[i]
		default:
			ns.dups = append(ns.dups, f)
		}
	}
	return syms
}

// liveEntry returns the entry of es that points at the link's position on the symbol, or,
// when the link is flat there (ticket 0), the entry that says so (FollowerTicket 0).
func liveEntry(es []TicketMapEntry, ticket int64) (TicketMapEntry, bool) {
	for _, e := range es {
		if e.FollowerTicket == ticket {
			return e, true
		}
	}
	return es[0], false
}

// adoptRatio is the ratio of a share found without a usable entry: what sizing gives now,
// or, failing that, the position's volume over the master's.
func (p *planner) adoptRatio(m broker.Position, ns *netSymbol) float64 {
	spec, _ := p.followerSpec(ns.name)
	side, _, _ := copySide(p.s, m)
	masterSpec := p.in.Master.Symbols[m.Symbol]
	v, why, _ := size(SizeInput{Sizing: p.s.Sizing, MasterVolume: m.Volume, Master: p.in.Master.Info,
		Follower: p.in.Follower.Info, MasterSpec: masterSpec, FollowerSpec: spec,
		StopDistance: stopDistance(expectedPrice(spec, side, m.OpenPrice), 0, m)})
	if why == 0 && m.Volume > 0 {
		return v / m.Volume
	}
	if m.Volume > 0 && ns.pos != nil {
		return ns.pos.Volume / m.Volume
	}
	return 0
}

// netOf sums the signed volumes of shares.
func netOf(shares []share) float64 {
	var n float64
	for _, s := range shares {
		n += s.volume()
	}
	return n
}

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

	target := p.netTarget(ns.shares, rules)
	track := make([]Tracked, len(ns.shares))
	for i, s := range ns.shares {
		track[i] = Tracked{MasterTicket: s.m.Ticket, Ratio: s.ratio}
	}
	side := sideOf(target)
	lead := leadShare(ns.shares, side)

	if rules.same(target, cur) {
		var at int64
		if ns.pos != nil {
			at = ns.pos.Ticket
			p.fixNetStops(ns, spec, lead, ns.pos.OpenPrice)
		}
		for _, s := range ns.shares {
			if s.fresh {
				p.track(s.m.Ticket, at, s.ratio)
			}
		}
		return
	}
	// A Close keeps its shares tracked, flat (FollowerTicket 0): they are still copied,
	// their net is just zero, and an Open that follows re-points them.
	netClose := Action{}
	if ns.pos != nil {
		netClose = closeAction(*ns.pos, p.eventTicket(), ReasonNetTarget)
		netClose.Track = track
	}
	switch {
	case ns.pos == nil:
		p.netOpen(ns, spec, rules, lead, lead, math.Abs(target), target, 0, track)
	case target == 0:
		p.act(netClose)
	case sideOf(cur) != side:
		p.act(netClose)
		p.netOpen(ns, spec, rules, lead, lead, math.Abs(target), target, 0, track)
	case math.Abs(target) > math.Abs(cur):
		p.netOpen(ns, spec, rules, lead, firstFresh(ns.shares, side, lead), math.Abs(target)-math.Abs(cur), target, cur, track)
	default:
		d := roundToStep(math.Abs(cur)-math.Abs(target), rules.step)
		if d < spec.MinLot {
			p.skip(Skip{MasterTicket: p.eventTicket(), FollowerTicket: ns.pos.Ticket, Symbol: ns.name, Reason: SkipReduceBelowMin,
				Detail: fmt.Sprintf("position %v, target %v: closing %v is below the minimum %v", cur, target, d, spec.MinLot)})
			return
		}
		p.act(Action{Kind: PartialClose, Reason: ReasonNetTarget, MasterTicket: p.eventTicket(), FollowerTicket: ns.pos.Ticket,
			Symbol: ns.name, Side: ns.pos.Side, Volume: d, Track: track})
		p.fixNetStops(ns, spec, lead, ns.pos.OpenPrice)
	}
}

// netTarget is the signed net of the shares: rounded toward zero to the step, capped at the
// maximum (and max_lots_per_symbol), and 0 below the minimum unless force_min is set.
func (p *planner) netTarget(shares []share, rules lotRules) float64 {
	n := netOf(shares)
	sign := float64(sideOf(n))
	v := RoundDownToStep(math.Abs(n), rules.step)
	capAt := rules.max
	if l := p.s.Limits.MaxLotsPerSymbol; l > 0 {
		capAt = math.Min(capAt, RoundDownToStep(l, rules.step))
	}
	if v > capAt {
		v = capAt
	}
	if v < rules.min {
		if !p.s.Sizing.ForceMin || v == 0 {
			return 0
		}
		v = rules.min
	}
	return sign * v
}

// netOpen opens (or adds) volume on the symbol. cur is the current signed net position.
func (p *planner) netOpen(ns *netSymbol, spec broker.SymbolSpec, rules lotRules, lead, by share, volume, target, cur float64, track []Tracked) {
	volume = roundToStep(volume, rules.step)
	side := sideOf(target)
	if volume < spec.MinLot {
		p.skip(Skip{MasterTicket: by.m.Ticket, Symbol: ns.name, Reason: SkipReduceBelowMin,
			Detail: fmt.Sprintf("position %v, target %v: adding %v is below the minimum %v", cur, target, volume, spec.MinLot)})
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
	p.act(Action{Kind: Open, Reason: reason, MasterTicket: by.m.Ticket, FollowerTicket: onTicket,
		Symbol: ns.name, Side: side, Volume: volume, SL: sl, TP: tp,
		Magic: p.in.Link.Magic, Comment: Marker(by.m.Ticket), Price: price, Track: track})
}

// fixNetStops modifies the position's SL/TP when they differ from what the lead share wants.
func (p *planner) fixNetStops(ns *netSymbol, spec broker.SymbolSpec, lead share, base float64) {
	if lead.side != ns.pos.Side {
		return
	}
	_, msl, mtp := copySide(p.s, lead.m)
	sl, tp := wantStops(p.s.Stops, spec, lead.side, msl, mtp, base)
	if !samePrice(ns.pos.SL, sl, spec) || !samePrice(ns.pos.TP, tp, spec) {
		p.act(Action{Kind: Modify, Reason: ReasonStops, MasterTicket: lead.m.Ticket, FollowerTicket: ns.pos.Ticket,
			Symbol: ns.name, Side: ns.pos.Side, Volume: ns.pos.Volume, SL: sl, TP: tp})
	}
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
