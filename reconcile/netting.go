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
	adopt bool        // carried by the position, ratio unknown (set by adoptShares)
	stale bool        // carried by the position, but the entry points elsewhere: re-track
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
	// markedAt is where the map says the master named by pos's marker is carried, when
	// that is not pos (a lost write): 0 when it is pos, flat, or the master has no entry.
	markedAt int64

	// Set by planSymbol:
	spec  broker.SymbolSpec
	rules lotRules
	track []Tracked // every share of known ratio, for the action that leaves the position
}

// netting plans a netting follower: one position per symbol carries every copy on it.
func (p *planner) netting() {
	syms := p.netSymbols()

	// Entries of closed master positions are done: their share leaves the net below.
	for _, e := range p.entries {
		if _, open := p.master(e.MasterTicket); !open && p.inScope(e.MasterTicket) {
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
	for _, ns := range syms {
		if ns.pos == nil {
			continue
		}
		if t, ok := ParseMarker(ns.pos.Comment); ok {
			if es := p.entriesOf(t); len(es) > 0 && !slices.ContainsFunc(es, func(e TicketMapEntry) bool { return e.FollowerTicket == ns.pos.Ticket }) {
				ns.markedAt = es[0].FollowerTicket
			}
		}
	}
	for _, m := range p.masters {
		sym, mapped := p.resolve(m)
		ns := syms[sym]
		if !mapped {
			ns = nil
		}
		side, _, _ := copySide(p.s, m)
		if es := p.entriesOf(m.Ticket); len(es) > 0 {
			if ns != nil && ns.foreign {
				p.skip(Skip{MasterTicket: m.Ticket, Symbol: m.Symbol, Reason: SkipNettingSymbolBusy,
					Detail: fmt.Sprintf("%s is held by a position of another magic number", sym)})
				continue
			}
			e, live := liveEntry(es, ns, m.Ticket)
			if !mapped || !live {
				p.skip(Skip{MasterTicket: m.Ticket, FollowerTicket: e.FollowerTicket, Symbol: m.Symbol, Reason: SkipCopyClosed,
					Detail: fmt.Sprintf("copy #%d is no longer on the follower", e.FollowerTicket)})
				continue
			}
			if ns == nil {
				ns = &netSymbol{name: sym}
				syms[sym] = ns
			}
			sh := share{m: m, side: side, ratio: e.Volume, stale: ns.pos != nil && e.FollowerTicket != ns.pos.Ticket}
			if !positive(sh.ratio) {
				sh.ratio, sh.fresh, sh.adopt = 0, true, true
			}
			ns.shares = append(ns.shares, sh)
			carried++
			continue
		}
		if ns != nil && ns.pos != nil && !ns.foreign {
			if t, marked := ParseMarker(ns.pos.Comment); marked && t == m.Ticket {
				ns.shares = append(ns.shares, share{m: m, side: side, fresh: true, adopt: true})
				carried++
				continue
			}
		}
		// Every master position without a copy is a candidate, whatever the scope: the
		// event path admits new copies as Plan does (oldest first, while max_open_copies
		// allows), so that a slot goes to the same master position on either path; it
		// plans the event's symbol only, as a whole (a missed copy on it is opened too).
		fresh = append(fresh, m)
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
		// Checked before the share is counted: a skipped master takes no slot of
		// max_open_copies (as on hedging), and Plan and PlanEvent agree.
		if _, fits := p.netCap(c.rules); !fits {
			p.skip(Skip{MasterTicket: m.Ticket, Symbol: m.Symbol, Reason: SkipMaxLotsPerSymbol,
				Detail: fmt.Sprintf("%s: limit %v is below the minimum %v", c.symbol, p.s.Limits.MaxLotsPerSymbol, c.rules.min)})
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

// liveEntry returns the entry of es (master ticket mt) that says the link's position on
// the symbol carries mt, and whether there is one. An entry is live when it points at the
// position (or, when the link is flat there, says so with FollowerTicket 0). When the
// position exists, an entry at 0 is live too: only the link opens positions of its magic,
// so an open (or a close that did not happen) left the map behind, as after an unknown
// outcome. So is an entry that points where the entry of the master named by the
// position's marker points (the master itself included, as on hedging): the link opened
// the position for that master while it was carried there, so everything carried with it
// moved to the position in the same order, whose map write was lost. Any other entry
// points at a position that is gone: a tombstone.
func liveEntry(es []TicketMapEntry, ns *netSymbol, mt int64) (TicketMapEntry, bool) {
	var pos *broker.Position
	if ns != nil {
		pos = ns.pos
	}
	var at int64
	if pos != nil {
		at = pos.Ticket
	}
	for _, e := range es {
		if e.FollowerTicket == at {
			return e, true
		}
	}
	if pos != nil {
		for _, e := range es {
			if e.FollowerTicket == 0 || (ns.markedAt != 0 && e.FollowerTicket == ns.markedAt) {
				return e, true
			}
		}
		if t, ok := ParseMarker(pos.Comment); ok && t == mt {
			return es[0], true
		}
	}
	return es[0], false
}

// adoptShares sets the ratios of the shares whose ratio is unknown (a lost or unknown
// ticket map write) so that nothing is bought or sold to repair the map: they are adopted
// against the position as it is (cur, signed). Where the net still asks for a trade, a share
// left at 0 would be adopted by the next plan against the position the trade leaves: it is
// adopted against that position now, until the position it is adopted against is the one
// the plan leaves, so that applying the plan and planning again yields nothing to do. Each
// round gives at least one share a ratio, or ends.
func (p *planner) adoptShares(ns *netSymbol, cur float64) {
	var adopt []int
	for i, s := range ns.shares {
		if s.adopt {
			adopt = append(adopt, i)
		}
	}
	if len(adopt) == 0 {
		return
	}
	at := cur
	p.adoptAt(ns, adopt, at, ns.pos != nil)
	for range adopt {
		after := ns.leaves(cur, p.netTarget(ns.shares, ns.rules))
		left := slices.DeleteFunc(slices.Clone(adopt), func(i int) bool { return positive(ns.shares[i].ratio) })
		if ns.rules.same(after, at) || len(left) == 0 {
			return
		}
		at = after
		p.adoptAt(ns, left, at, at != 0)
	}
}

// adoptAt sets the ratios of the shares at indexes idx (of unknown ratio) against a position
// of at lots (signed; held false: the link is flat). Held, the shares on the side of what the
// position holds beyond the other shares split that remainder in proportion to what sizing
// gives them now (equally when sizing fails for one of them), and the others (on the other
// side, or when nothing remains) hold nothing of it: ratio 0, as on hedging the position as
// it is stays as it is. Flat, sizing gives the ratio. A ratio that stays 0 is not tracked.
func (p *planner) adoptAt(ns *netSymbol, idx []int, at float64, held bool) {
	sized := make([]float64, len(idx))
	for k, i := range idx {
		sized[k] = p.sizedRatio(ns.shares[i].m, ns.shares[i].side, ns.name)
	}
	if held {
		rest := at
		for i, s := range ns.shares {
			if !slices.Contains(idx, i) {
				rest -= s.volume()
			}
		}
		on := make([]bool, len(idx))
		allSized := true
		for k, i := range idx {
			s := ns.shares[i]
			on[k] = math.Abs(rest) > stepEpsilon && s.side == sideOf(rest) && positive(s.m.Volume)
			allSized = allSized && (!on[k] || sized[k] > 0)
		}
		var weighted float64
		for k, i := range idx {
			if on[k] && !allSized {
				sized[k] = 1
			}
			if on[k] {
				weighted += sized[k] * ns.shares[i].m.Volume
			}
		}
		for k := range sized {
			if on[k] {
				sized[k] *= math.Abs(rest) / weighted
			} else {
				sized[k] = 0
			}
		}
	}
	for k, i := range idx {
		ns.shares[i].ratio = sized[k]
	}
}

// sizedRatio is the ratio sizing gives a new copy of m on side now (0 when it does not
// size), with the stop-loss the copy would carry, as evaluate sizes it.
func (p *planner) sizedRatio(m broker.Position, side broker.Side, symbol string) float64 {
	if !positive(m.Volume) {
		return 0
	}
	spec, _ := p.followerSpec(symbol)
	_, msl, mtp := copySide(p.s, m)
	price := expectedPrice(spec, side, m.OpenPrice)
	sl, _ := wantStops(p.s.Stops, spec, side, msl, mtp, price)
	masterSpec := p.in.Master.Symbols[m.Symbol]
	if masterSpec.Name == "" {
		masterSpec.Name = m.Symbol
	}
	v, why, _ := size(SizeInput{Sizing: p.s.Sizing, MasterVolume: m.Volume, Master: p.in.Master.Info,
		Follower: p.in.Follower.Info, MasterSpec: masterSpec, FollowerSpec: spec,
		StopDistance: stopDistance(price, sl, m)})
	if why != 0 {
		return 0
	}
	return v / m.Volume
}

// netOf sums the signed volumes of shares.
func netOf(shares []share) float64 {
	var n float64
	for _, s := range shares {
		n += s.volume()
	}
	return n
}
