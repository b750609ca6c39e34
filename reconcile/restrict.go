package reconcile

import (
	"cmp"
	"slices"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/reconcile/protect"
)

// Restriction limits what a plan may do on the follower. The engine sets it from the
// follower's and the link's protections (package reconcile/protect): a stop-out or the
// close-only mode.
type Restriction int8

const (
	// Unrestricted plans as usual.
	Unrestricted Restriction = iota
	// NoNewCopies copies nothing new (every uncopied master position is skipped with
	// SkipRestricted); existing copies still follow their masters: closes, reductions, stops.
	NoNewCopies
	// CloseCopies copies nothing new and closes the link's copies (ReasonProtection). The
	// ticket map keeps the entries of open master positions, pointed at the closed copies,
	// so that those positions are tombstones and are not copied again when the restriction
	// ends; only master positions opened after that are.
	CloseCopies
)

// String returns the restriction's snake_case name.
func (r Restriction) String() string {
	switch r {
	case Unrestricted:
		return "none"
	case NoNewCopies:
		return "no_new_copies"
	case CloseCopies:
		return "close_copies"
	}
	return "restriction(?)"
}

// restriction is the stricter of Input.Restrict and the link's close-only mode.
func (p *planner) restriction() Restriction {
	r := p.in.Restrict
	switch p.s.Protect.CloseOnly {
	case protect.LetClose:
		r = max(r, NoNewCopies)
	case protect.CloseNow:
		r = CloseCopies
	}
	return r
}

// closeAll plans a CloseCopies restriction.
func (p *planner) closeAll() {
	p.copied = make(map[int64]bool)
	if p.in.Follower.Info.Mode == broker.Netting {
		p.closeAllNetting()
	} else {
		p.closeAllHedging()
	}
	// Nothing is copied: say so for every master position without a copy, as Plan would.
	for _, m := range p.masters {
		if p.inScope(m.Ticket) && !p.copied[m.Ticket] {
			p.skip(Skip{MasterTicket: m.Ticket, Symbol: m.Symbol, Reason: SkipRestricted, Detail: CloseCopies.String()})
		}
	}
}

// closeAllHedging closes every identified copy of the link. Copies of closed master
// positions are closed as orphans (their entries dropped), the others for protection, each
// found only by its marker tracked first so that it becomes a tombstone.
func (p *planner) closeAllHedging() {
	copies := p.matchCopies(nil)
	book := hedgingBook{lots: make(map[string]float64)}
	for _, t := range p.knownTickets(copies, nil) {
		p.copied[t] = true
		m, open := p.master(t)
		cs := copies.of(t)
		if !open || !p.inScope(t) {
			p.manageTicket(t, cs, p.entriesOf(t), &book)
			continue
		}
		if len(p.entriesOf(t)) == 0 && len(cs) > 0 && positive(m.Volume) {
			p.track(t, cs[0].pos.Ticket, cs[0].pos.Volume/m.Volume)
		}
		for _, c := range cs {
			p.act(closeAction(c.pos, t, ReasonProtection))
		}
	}
	// Positions of the link's magic that neither the map nor a marker identify (Plan leaves
	// them alone): the magic is the link's own, so they are its copies and are closed too.
	var unknown []broker.Position
	for _, f := range p.in.Follower.Positions {
		if f.Magic == p.in.Link.Magic && p.sc.all && !copies.has(f.Ticket) &&
			!slices.ContainsFunc(unknown, func(u broker.Position) bool { return u.Ticket == f.Ticket }) {
			unknown = append(unknown, f)
		}
	}
	slices.SortFunc(unknown, func(a, b broker.Position) int { return cmp.Compare(a.Ticket, b.Ticket) })
	for _, f := range unknown {
		p.act(closeAction(f, 0, ReasonProtection))
	}
}

// closeAllNetting closes the link's position (and duplicates) on every symbol in scope.
// Entries of closed master positions are dropped. Entries at 0 of open master positions
// (carried by the symbol's position, as after a lost write, or carried flat) are pointed at
// the position, or at FlatTombstone on a flat symbol, so that once the position is closed
// they are tombstones: a flat pair whose one side then closes must not open a position.
func (p *planner) closeAllNetting() {
	syms := p.netSymbols()
	for _, e := range p.entries {
		m, open := p.master(e.MasterTicket)
		if !open {
			if p.inScope(e.MasterTicket) {
				p.res.Untrack = append(p.res.Untrack, e)
			}
			continue
		}
		p.copied[e.MasterTicket] = true
		sym, ok := p.resolve(m)
		if e.FollowerTicket != 0 || !ok || !(p.sc.all || sym == p.sc.symbol) {
			continue
		}
		at := int64(FlatTombstone)
		if ns := syms[sym]; ns != nil && ns.pos != nil && !ns.foreign {
			at = ns.pos.Ticket
		}
		p.track(e.MasterTicket, at, e.Volume)
	}
	names := make([]string, 0, len(syms))
	for name, ns := range syms {
		if ns.pos != nil && (p.sc.all || name == p.sc.symbol) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		ns := syms[name]
		// The master named by the position's marker is carried by it even when its entry
		// was lost: track it so that it becomes a tombstone too.
		if t, ok := ParseMarker(ns.pos.Comment); ok {
			if m, open := p.master(t); open && !p.copied[t] && positive(m.Volume) {
				p.copied[t] = true
				p.track(t, ns.pos.Ticket, ns.pos.Volume/m.Volume)
			}
		}
		for _, c := range append([]broker.Position{*ns.pos}, ns.dups...) {
			p.act(closeAction(c, 0, ReasonProtection))
		}
	}
}

// FlatTombstone is the follower ticket of a netting entry whose master position was
// carried flat when a protection closed the link's copies: no position has it, so the
// entry is a tombstone and the master position is not copied again.
const FlatTombstone = -1
