package reconcile

import (
	"fmt"
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

	// Set by planSymbol:
	spec  broker.SymbolSpec
	rules lotRules
	track []Tracked // every share, for the action that leaves the position
}

// netting plans a netting follower: one position per symbol carries every copy on it.
func (p *planner) netting() {
	syms := p.netSymbols()

	// Entries of closed master positions are done: their share leaves the net below.
	for _, e := range p.entries {
		if _, open := p.master[e.MasterTicket]; !open && p.inScope(e.MasterTicket) {
			p.res.Untrack = append(p.res.Untrack, e)
		}
	}
	fresh, carried := p.carriedShares(syms)
	p.admitShares(syms, fresh, carried)

	names := make([]string, 0, len(syms))
	for name := range syms {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if p.sc.all || name == p.sc.symbol {
			p.planSymbol(syms[name])
		}
	}
}

// carriedShares adds to syms the shares the link's positions carry already (by the ticket
// map, or by the position's marker), records tombstones, and returns the master positions
// that could be copied anew and how many shares are carried (for max_open_copies, whatever
// the scope).
func (p *planner) carriedShares(syms map[string]*netSymbol) (fresh []broker.Position, carried int) {
	entries := p.entriesByMaster()
	for _, m := range p.masters {
		sym, mapped := p.resolve(m)
		ns := syms[sym]
		if !mapped {
			ns = nil
		}
		side, _, _ := copySide(p.s, m)
		if es := entries[m.Ticket]; len(es) > 0 {
			if ns != nil && ns.foreign {
				p.skip(Skip{MasterTicket: m.Ticket, Symbol: m.Symbol, Reason: SkipNettingSymbolBusy,
					Detail: fmt.Sprintf("%s is held by a position of another magic number", sym)})
				continue
			}
			var at int64 // the link's position on the symbol; 0 when flat
			if ns != nil && ns.pos != nil {
				at = ns.pos.Ticket
			}
			e, live := liveEntry(es, at)
			if !mapped || !live {
				p.skip(Skip{MasterTicket: m.Ticket, FollowerTicket: e.FollowerTicket, Symbol: m.Symbol, Reason: SkipCopyClosed,
					Detail: fmt.Sprintf("copy #%d is no longer on the follower", e.FollowerTicket)})
				continue
			}
			if ns == nil {
				ns = &netSymbol{name: sym}
				syms[sym] = ns
			}
			sh := share{m: m, side: side, ratio: e.Volume}
			if !positive(sh.ratio) {
				sh.ratio, sh.fresh = p.adoptRatio(m, ns), true
			}
			ns.shares = append(ns.shares, sh)
			carried++
			continue
		}
		if ns != nil && ns.pos != nil && !ns.foreign {
			if t, marked := ParseMarker(ns.pos.Comment); marked && t == m.Ticket {
				ns.shares = append(ns.shares, share{m: m, side: side, ratio: p.adoptRatio(m, ns), fresh: true})
				carried++
				continue
			}
		}
		// The event path plans the event's symbol as a whole: a missed copy on it is
		// opened too, so that the net target never leaves out a master position.
		if p.sc.all || (mapped && sym == p.sc.symbol) {
			fresh = append(fresh, m)
		}
	}
	return fresh, carried
}

// admitShares adds the master positions that pass every check for a new copy as fresh
// shares, oldest first, while max_open_copies allows.
func (p *planner) admitShares(syms map[string]*netSymbol, fresh []broker.Position, carried int) {
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
