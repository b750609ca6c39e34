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
	entries := p.entriesByMaster()
	copies, owner := p.matchCopies()
	book := hedgingBook{lots: make(map[string]float64)}
	for _, t := range p.knownTickets(copies, entries) {
		p.manageTicket(t, copies[t], entries[t], owner, &book)
	}
	for _, m := range p.masters {
		if !p.inScope(m.Ticket) || len(copies[m.Ticket]) > 0 || len(entries[m.Ticket]) > 0 {
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

// matchCopies finds the link's copies on the follower, by master ticket (each list oldest
// first): through the ticket map first (one master ticket per follower ticket, the map
// wins over the comment), then through the marker. owner maps the follower tickets the map
// matched to their master ticket. Positions of the link's magic that match neither are
// reported as unidentified and left alone.
func (p *planner) matchCopies() (copies map[int64][]broker.Position, owner map[int64]int64) {
	var own []broker.Position
	for _, f := range p.in.Follower.Positions {
		if f.Magic == p.in.Link.Magic {
			own = append(own, f)
		}
	}
	// By ticket, the first of a repeated ticket kept (a stable sort keeps the repeats in
	// their order); searched by ticket below instead of a set per plan.
	byTicket := func(a, b broker.Position) int { return cmp.Compare(a.Ticket, b.Ticket) }
	slices.SortStableFunc(own, byTicket)
	own = slices.CompactFunc(own, func(a, b broker.Position) bool { return a.Ticket == b.Ticket })
	isOwn := func(t int64) bool {
		_, found := slices.BinarySearchFunc(own, t, func(p broker.Position, t int64) int { return cmp.Compare(p.Ticket, t) })
		return found
	}

	owner = make(map[int64]int64)
	for _, e := range p.entries {
		if _, taken := owner[e.FollowerTicket]; !taken && isOwn(e.FollowerTicket) {
			owner[e.FollowerTicket] = e.MasterTicket
		}
	}
	copies = make(map[int64][]broker.Position)
	for _, f := range own {
		if t, ok := owner[f.Ticket]; ok {
			copies[t] = append(copies[t], f)
		} else if t, ok := ParseMarker(f.Comment); ok {
			copies[t] = append(copies[t], f)
		} else if p.sc.all {
			p.skip(Skip{FollowerTicket: f.Ticket, Symbol: f.Symbol, Reason: SkipUnidentified,
				Detail: fmt.Sprintf("magic %d, comment %q, no ticket map entry", f.Magic, f.Comment)})
		}
	}
	for _, cs := range copies {
		slices.SortFunc(cs, byAge)
	}
	return copies, owner
}

// manageTicket plans the copies cs and entries es of master ticket t: orphans closed (and
// untracked), a tombstone reported, duplicates closed and the kept copy managed. book
// counts what stays open.
func (p *planner) manageTicket(t int64, cs []broker.Position, es []TicketMapEntry, owner map[int64]int64, book *hedgingBook) {
	if !p.inScope(t) {
		for _, c := range cs {
			book.add(c.Symbol, c.Volume)
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
		mapped := slices.ContainsFunc(cs, func(c broker.Position) bool { return owner[c.Ticket] == t })
		for _, c := range cs {
			a := closeAction(c, t, ReasonMasterClosed)
			a.Untrack = len(es) > 0 && (owner[c.Ticket] == t || !mapped)
			p.act(a)
		}
	case len(cs) == 0:
		p.skip(Skip{MasterTicket: t, FollowerTicket: es[0].FollowerTicket, Symbol: m.Symbol, Reason: SkipCopyClosed,
			Detail: fmt.Sprintf("copy #%d is no longer on the follower", es[0].FollowerTicket)})
	default:
		for _, dup := range cs[1:] {
			p.act(closeAction(dup, t, ReasonDuplicate))
		}
		if v := p.manageCopy(m, cs[0], es); v > 0 {
			book.add(cs[0].Symbol, v)
		}
	}
}

// knownTickets returns the master tickets that have copies or entries, open masters first
// (oldest first), then closed ones by ticket.
func (p *planner) knownTickets(copies map[int64][]broker.Position, entries map[int64][]TicketMapEntry) []int64 {
	seen := make(map[int64]bool, len(copies)+len(entries))
	var open, closed []int64
	add := func(t int64) {
		if seen[t] {
			return
		}
		seen[t] = true
		if _, ok := p.master(t); !ok {
			closed = append(closed, t)
		}
	}
	for t := range copies {
		add(t)
	}
	for t := range entries {
		add(t)
	}
	for _, m := range p.masters {
		if seen[m.Ticket] {
			open = append(open, m.Ticket)
		}
	}
	slices.Sort(closed)
	return append(open, closed...)
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
			p.act(Action{Kind: Modify, Reason: ReasonStops, MasterTicket: m.Ticket, FollowerTicket: c.Ticket,
				Symbol: c.Symbol, Side: c.Side, Volume: volume, SL: sl, TP: tp})
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
