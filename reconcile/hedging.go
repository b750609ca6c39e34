package reconcile

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/snapcopier/copier/broker"
)

// hedgingBook counts the link's copies that stay open after the plan, for the limits.
type hedgingBook struct {
	copies int
	lots   map[string]float64 // follower symbol → lots
}

func (b *hedgingBook) add(symbol string, volume float64) {
	b.copies++
	b.lots[symbol] += volume
}

// hedging plans a hedging follower: every copy is its own position.
func (p *planner) hedging() {
	var copyRoom [4]matchedCopy // a plan's lists, on the stack while they fit
	var ticketRoom [4]int64
	copies := p.matchCopies(copyRoom[:0])
	book := hedgingBook{lots: make(map[string]float64)}
	for _, t := range p.knownTickets(copies, ticketRoom[:0]) {
		p.manageTicket(t, copies.of(t), p.entriesOf(t), &book)
	}
	for _, m := range p.masters {
		if !p.inScope(m.Ticket) || len(copies.of(m.Ticket)) > 0 || len(p.entriesOf(m.Ticket)) > 0 {
			continue
		}
		c, ok := p.evaluate(m)
		if !ok {
			continue
		}
		if v, ok := p.fitLimits(c, &book); ok {
			p.act(p.openAction(c, v))
			book.add(c.symbol, v)
		}
	}
}

// matchedCopy is one of the link's copies on the follower: the master ticket it copies, and
// whether the ticket map says so (mapped) or its marker.
type matchedCopy struct {
	master int64
	mapped bool
	pos    broker.Position
}

// copySet is the link's copies on the follower by master ticket (ascending), each master's
// oldest first. Two slices a plan instead of a map of lists and a map of owners: this runs
// for every master event of every follower.
type copySet []matchedCopy

// of returns master ticket t's copies, oldest first.
func (s copySet) of(t int64) copySet {
	i, _ := slices.BinarySearchFunc(s, t, func(c matchedCopy, t int64) int { return cmp.Compare(c.master, t) })
	j := i
	for j < len(s) && s[j].master == t {
		j++
	}
	return s[i:j]
}

// has reports whether follower ticket ft is one of the copies.
func (s copySet) has(ft int64) bool {
	return slices.ContainsFunc(s, func(c matchedCopy) bool { return c.pos.Ticket == ft })
}

// matchCopies finds the link's copies on the follower: through the ticket map first (one
// master ticket per follower ticket, the map wins over the comment), then through the
// marker. Positions of the link's magic that match neither are reported as unidentified
// and left alone.
func (p *planner) matchCopies(copies copySet) copySet {
	for _, f := range p.in.Follower.Positions {
		if f.Magic == p.in.Link.Magic {
			copies = append(copies, matchedCopy{pos: f})
		}
	}
	// By ticket, the first of a repeated ticket kept (a stable sort keeps the repeats in
	// their order); searched by ticket below instead of a set per plan. One slot per own
	// position: the first map entry naming it, else its marker.
	slices.SortStableFunc(copies, func(a, b matchedCopy) int { return cmp.Compare(a.pos.Ticket, b.pos.Ticket) })
	copies = slices.CompactFunc(copies, func(a, b matchedCopy) bool { return a.pos.Ticket == b.pos.Ticket })
	for _, e := range p.entries {
		if i, found := slices.BinarySearchFunc(copies, e.FollowerTicket, func(c matchedCopy, t int64) int { return cmp.Compare(c.pos.Ticket, t) }); found && !copies[i].mapped {
			copies[i].master, copies[i].mapped = e.MasterTicket, true
		}
	}
	n := 0
	for _, c := range copies {
		if !c.mapped {
			t, ok := ParseMarker(c.pos.Comment)
			if !ok {
				if p.sc.all {
					f := c.pos
					p.skip(Skip{FollowerTicket: f.Ticket, Symbol: f.Symbol, Reason: SkipUnidentified,
						Detail: fmt.Sprintf("magic %d, comment %q, no ticket map entry", f.Magic, f.Comment)})
				}
				continue
			}
			c.master = t
		}
		copies[n] = c
		n++
	}
	copies = copies[:n]
	slices.SortFunc(copies, func(a, b matchedCopy) int {
		if c := cmp.Compare(a.master, b.master); c != 0 {
			return c
		}
		return byAge(a.pos, b.pos)
	})
	return copies
}

// manageTicket plans the copies cs and entries es of master ticket t: orphans closed (and
// untracked), a tombstone reported, duplicates closed and the kept copy managed. book
// counts what stays open.
func (p *planner) manageTicket(t int64, cs copySet, es []TicketMapEntry, book *hedgingBook) {
	if !p.inScope(t) {
		for _, c := range cs {
			book.add(c.pos.Symbol, c.pos.Volume)
		}
		return
	}
	m, open := p.master(t)
	switch {
	case !open:
		if len(cs) == 0 {
			p.res.Untrack = append(p.res.Untrack, es...)
			return
		}
		// The entry goes with the copy it points at (with any close when it points at
		// none): until then it is what finds a copy whose comment was overwritten.
		mapped := slices.ContainsFunc(cs, func(c matchedCopy) bool { return c.mapped })
		for _, c := range cs {
			a := closeAction(c.pos, t, ReasonMasterClosed)
			a.Untrack = len(es) > 0 && (c.mapped || !mapped)
			p.act(a)
		}
	case len(cs) == 0:
		p.skip(Skip{MasterTicket: t, FollowerTicket: es[0].FollowerTicket, Symbol: m.Symbol, Reason: SkipCopyClosed,
			Detail: fmt.Sprintf("copy #%d is no longer on the follower", es[0].FollowerTicket)})
	default:
		for _, dup := range cs[1:] {
			p.act(closeAction(dup.pos, t, ReasonDuplicate))
		}
		if v := p.manageCopy(m, cs[0].pos, es); v > 0 {
			book.add(cs[0].pos.Symbol, v)
		}
	}
}

// knownTickets returns the master tickets that have copies or entries, open masters first
// (oldest first), then closed ones by ticket. The copies and the entries are both sorted
// by master ticket: the closed ones are merged from them, without a set.
func (p *planner) knownTickets(copies copySet, out []int64) []int64 {
	for _, m := range p.masters {
		if len(copies.of(m.Ticket)) > 0 || len(p.entriesOf(m.Ticket)) > 0 {
			out = append(out, m.Ticket)
		}
	}
	i, j := 0, 0
	var last int64
	for n := 0; i < len(copies) || j < len(p.entries); n++ {
		var t int64
		if j == len(p.entries) || (i < len(copies) && copies[i].master <= p.entries[j].MasterTicket) {
			t = copies[i].master
			i++
		} else {
			t = p.entries[j].MasterTicket
			j++
		}
		if n > 0 && t == last {
			continue
		}
		last = t
		if _, open := p.master(t); !open {
			out = append(out, t)
		}
	}
	return out
}

// fitLimits applies max_open_copies and max_lots_per_symbol to a new copy and returns its
// volume, or records the skip.
func (p *planner) fitLimits(c candidate, book *hedgingBook) (float64, bool) {
	l := p.s.Limits
	if l.MaxOpenCopies > 0 && book.copies >= l.MaxOpenCopies {
		p.skip(Skip{MasterTicket: c.m.Ticket, Symbol: c.m.Symbol, Reason: SkipMaxOpenCopies,
			Detail: fmt.Sprintf("%d copies open, limit %d", book.copies, l.MaxOpenCopies)})
		return 0, false
	}
	v := c.volume
	if l.MaxLotsPerSymbol > 0 {
		used := book.lots[c.symbol]
		if room := RoundDownToStep(l.MaxLotsPerSymbol-used, c.rules.step); v > room {
			if room < c.rules.min {
				p.skip(Skip{MasterTicket: c.m.Ticket, Symbol: c.m.Symbol, Reason: SkipMaxLotsPerSymbol,
					Detail: fmt.Sprintf("%s: %v lots open, limit %v, copy %v", c.symbol, used, l.MaxLotsPerSymbol, v)})
				return 0, false
			}
			v = room
		}
	}
	return v, true
}

// manageCopy keeps the copy kept for open master m in line: ticket map entry, proportional
// volume, stops. It returns the copy's volume after the plan (0 when it is closed).
func (p *planner) manageCopy(m broker.Position, c broker.Position, es []TicketMapEntry) float64 {
	ratio, pointed := 0.0, false
	for _, e := range es {
		if e.FollowerTicket == c.Ticket && positive(e.Volume) {
			ratio, pointed = e.Volume, true
			break
		}
	}
	if !pointed {
		for _, e := range es {
			if positive(e.Volume) {
				ratio = e.Volume
				break
			}
		}
	}
	known := ratio > 0
	if !known && positive(m.Volume) {
		ratio = c.Volume / m.Volume // adopt: the copy as it is now mirrors the master as it is now
	}
	if !pointed && ratio > 0 {
		p.track(m.Ticket, c.Ticket, ratio)
	}

	volume := c.Volume
	spec, hasSpec := p.followerSpec(c.Symbol)
	if known && hasSpec {
		v, closed := p.reduce(m, c, spec, ratio)
		if closed {
			return 0
		}
		volume = v
	}

	side, msl, mtp := copySide(p.s, m)
	if c.Side == side {
		sl, tp := wantStops(p.s.Stops, spec, side, msl, mtp, c.OpenPrice)
		if !samePrice(c.SL, sl, spec) || !samePrice(c.TP, tp, spec) {
			if detail := passedStop(spec, side, sl, tp); detail != "" {
				p.skip(Skip{MasterTicket: m.Ticket, FollowerTicket: c.Ticket, Symbol: c.Symbol, Reason: SkipStopPassed, Detail: "stops not moved: " + detail})
			} else {
				p.act(Action{Kind: Modify, Reason: ReasonStops, MasterTicket: m.Ticket, FollowerTicket: c.Ticket,
					Symbol: c.Symbol, Side: c.Side, Volume: volume, SL: sl, TP: tp})
			}
		}
	}
	return volume
}

// reduce plans the partial close (or close) of copy c down to ratio × the master's volume.
// It returns the copy's volume afterwards, and true when the copy is closed.
func (p *planner) reduce(m, c broker.Position, spec broker.SymbolSpec, ratio float64) (float64, bool) {
	rules, why, _ := lotRulesFor(spec, p.s.Sizing)
	if why != 0 {
		return c.Volume, false
	}
	target := RoundDownToStep(ratio*m.Volume, rules.step)
	if c.Volume-target < rules.step/2 {
		return c.Volume, false // at or below target: copies are never increased
	}
	if target < rules.min {
		if !p.s.Sizing.ForceMin {
			p.act(closeAction(c, m.Ticket, ReasonRemainderBelowMin))
			return 0, true
		}
		target = rules.min
		if c.Volume-target < rules.step/2 {
			return c.Volume, false
		}
	}
	d := roundToStep(c.Volume-target, rules.step)
	if d < spec.MinLot {
		p.skip(Skip{MasterTicket: m.Ticket, FollowerTicket: c.Ticket, Symbol: m.Symbol, Reason: SkipAdjustBelowMin,
			Detail: fmt.Sprintf("copy %v, target %v: closing %v is below the minimum %v", c.Volume, target, d, spec.MinLot)})
		return c.Volume, false
	}
	p.act(Action{Kind: PartialClose, Reason: ReasonMasterReduced, MasterTicket: m.Ticket, FollowerTicket: c.Ticket,
		Symbol: c.Symbol, Side: c.Side, Volume: d})
	return target, false
}

// closeAction closes follower position c.
func closeAction(c broker.Position, masterTicket int64, why Reason) Action {
	return Action{Kind: Close, Reason: why, MasterTicket: masterTicket, FollowerTicket: c.Ticket,
		Symbol: c.Symbol, Side: c.Side, Volume: c.Volume}
}
