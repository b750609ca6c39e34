package reconcile

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/snapcopier/copier/broker"
)

// Plan compares the master's positions with the follower's and returns the actions that
// bring the follower's copies of this link in line, by the rules of the package doc:
//
//   - copies are matched by the ticket map, then by the link's magic number and marker;
//   - a missing copy is opened when the master position passes the filters, is inside the
//     opening window and the price deviation, sizes to a valid volume and fits the limits,
//     unless the master ticket was copied before (a tombstone entry: its copy was closed on
//     the follower and is not reopened);
//   - copies of closed master positions (orphans) are closed, and so are duplicates
//     (the oldest copy, by OpenTime then ticket, is kept);
//   - a copy larger than its ratio × the master's volume is partially closed;
//   - SL/TP that differ from the link's policy by more than half a point are modified;
//   - on a netting follower each symbol's position is driven to the net of the master
//     positions it copies (see the package doc).
//
// Positions without the link's magic number are never touched. Plan is a pure function.
func Plan(in Input) Result {
	return plan(in, scope{all: true})
}

// scope limits a plan to one master ticket (and, on a netting follower, its symbol): the
// event path. Limits still count every copy.
type scope struct {
	all    bool
	ticket int64
	symbol string // netting: the follower symbol of ticket ("" = none)
}

// planner holds one plan under construction.
type planner struct {
	in      Input
	s       Settings
	sc      scope
	masters []broker.Position // open, sorted by OpenTime then ticket
	// byTicket indexes masters by ticket when there are more than linearMasters of them;
	// fewer are searched in place (master): a map per plan was 9 % of a fan-out's bytes.
	byTicket map[int64]int
	entries  []TicketMapEntry // this link's, sorted by master then follower ticket; only read (may be the caller's)
	res      Result
	copied   map[int64]bool // closeAll: master tickets that have (or had) a copy
	// quotesStale: the follower's quotes are older than QuoteMaxAge; followerSpec hides them.
	quotesStale bool
}

func plan(in Input, sc scope) Result {
	p := &planner{in: in, s: in.Link.Settings, sc: sc}
	p.res.Actions = in.ActionRoom[:0]
	p.quotesStale = !in.Follower.QuotesAt.IsZero() && in.Now.Sub(in.Follower.QuotesAt) > QuoteMaxAge
	if !p.valid() {
		return p.res
	}
	p.index()
	p.in.Restrict = p.restriction()
	if p.in.Restrict == CloseCopies {
		p.closeAll()
		return p.finish()
	}
	if in.Follower.Info.Mode == broker.Netting {
		p.netting()
	} else {
		p.hedging()
	}
	return p.finish()
}

// valid records a plan-wide skip and returns false when nothing can be planned.
func (p *planner) valid() bool {
	if p.in.Link.Magic == 0 {
		p.res.Skipped = append(p.res.Skipped, Skip{Reason: SkipInvalidLink, Detail: fmt.Sprintf("link %d has magic number 0", p.in.Link.ID)})
		return false
	}
	if !p.in.Link.valid {
		if err := p.s.Validate(); err != nil {
			p.res.Skipped = append(p.res.Skipped, Skip{Reason: SkipInvalidLink, Detail: err.Error()})
			return false
		}
	}
	if m := p.in.Follower.Info.Mode; m != broker.Hedging && m != broker.Netting {
		p.res.Skipped = append(p.res.Skipped, Skip{Reason: SkipAccountMode, Detail: fmt.Sprintf("follower account mode %d", m)})
		return false
	}
	return true
}

// index sorts the master positions and this link's ticket map entries.
//
// The master's positions are only read: when they already come sorted and without a
// ticket twice (a cached master state usually does), the plan uses the caller's slice
// instead of a sorted copy (a copy per plan was 3 % of the CPU of a fan-out).
func (p *planner) index() {
	p.masters = p.in.Master.Positions
	if !slices.IsSortedFunc(p.masters, byAge) {
		p.masters = slices.Clone(p.masters)
		slices.SortFunc(p.masters, byAge)
	}
	if len(p.masters) > linearMasters {
		p.byTicket = make(map[int64]int, len(p.masters))
	}
	for i := range p.masters {
		if p.find(p.masters[:i], p.masters[i].Ticket) >= 0 {
			p.dedupeMasters(i)
			break
		}
		if p.byTicket != nil {
			p.byTicket[p.masters[i].Ticket] = i
		}
	}
	// The entries too are used in place when they are all this link's and sorted (the
	// follower core caches them so).
	link := p.in.Link.ID
	if slices.IsSortedFunc(p.in.TicketMap, byEntry) && !slices.ContainsFunc(p.in.TicketMap, func(e TicketMapEntry) bool { return e.LinkID != link }) {
		p.entries = p.in.TicketMap
		return
	}
	for _, e := range p.in.TicketMap {
		if e.LinkID == link {
			p.entries = append(p.entries, e)
		}
	}
	slices.SortFunc(p.entries, byEntry)
}

// linearMasters is the most master positions a plan searches in place, without a map.
const linearMasters = 16

// find returns the index of ticket t in ms, a prefix of the masters index has indexed
// so far (p.masters itself once index is done), or -1.
func (p *planner) find(ms []broker.Position, t int64) int {
	if p.byTicket != nil {
		if i, ok := p.byTicket[t]; ok && i < len(ms) {
			return i
		}
		return -1
	}
	for i := range ms {
		if ms[i].Ticket == t {
			return i
		}
	}
	return -1
}

// master returns the open master position of ticket t.
func (p *planner) master(t int64) (broker.Position, bool) {
	if i := p.find(p.masters, t); i >= 0 {
		return p.masters[i], true
	}
	return broker.Position{}, false
}

// dedupeMasters drops every later position of a ticket already seen (the oldest stays),
// on a copy: from index i on, p.masters holds a repeated ticket.
func (p *planner) dedupeMasters(i int) {
	kept := slices.Clone(p.masters[:i])
	for _, m := range p.masters[i:] {
		if p.find(kept, m.Ticket) < 0 {
			if p.byTicket != nil {
				p.byTicket[m.Ticket] = len(kept)
			}
			kept = append(kept, m)
		}
	}
	p.masters = kept
}

// byAge orders positions by OpenTime, then ticket: the oldest first.
func byAge(a, b broker.Position) int {
	if c := a.OpenTime.Compare(b.OpenTime); c != 0 {
		return c
	}
	return cmp.Compare(a.Ticket, b.Ticket)
}

// byEntry orders ticket map entries by master ticket, then follower ticket.
func byEntry(a, b TicketMapEntry) int {
	if c := cmp.Compare(a.MasterTicket, b.MasterTicket); c != 0 {
		return c
	}
	if c := cmp.Compare(a.FollowerTicket, b.FollowerTicket); c != 0 {
		return c
	}
	return cmp.Compare(a.Volume, b.Volume)
}

// entriesOf returns master ticket t's entries of this link: a run of p.entries, which
// index sorted by master ticket (searched there instead of grouped in a map per plan).
func (p *planner) entriesOf(t int64) []TicketMapEntry {
	i, _ := slices.BinarySearchFunc(p.entries, t, func(e TicketMapEntry, t int64) int { return cmp.Compare(e.MasterTicket, t) })
	j := i
	for j < len(p.entries) && p.entries[j].MasterTicket == t {
		j++
	}
	return p.entries[i:j]
}

// inScope reports whether the plan may act for master ticket t.
func (p *planner) inScope(t int64) bool { return p.sc.all || t == p.sc.ticket }

// act appends an action.
func (p *planner) act(a Action) { p.res.Actions = append(p.res.Actions, a) }

// skip records a skip that concerns the plan's scope: on a netting follower's event path,
// that is every master position on the event's symbol, which is planned as a whole.
func (p *planner) skip(s Skip) {
	if p.sc.all || s.MasterTicket == p.sc.ticket || (s.MasterTicket == 0 && s.Symbol == p.sc.symbol && s.Symbol != "") ||
		p.onScopeSymbol(s.MasterTicket) {
		p.res.Skipped = append(p.res.Skipped, s)
	}
}

// onScopeSymbol reports whether open master position t maps to the netting event path's
// follower symbol.
func (p *planner) onScopeSymbol(t int64) bool {
	m, open := p.master(t)
	if p.sc.symbol == "" || !open {
		return false
	}
	sym, ok := p.resolve(m)
	return ok && sym == p.sc.symbol
}

// track asks the engine to write an entry now.
func (p *planner) track(masterTicket, followerTicket int64, ratio float64) {
	p.res.Track = append(p.res.Track, TicketMapEntry{LinkID: p.in.Link.ID, MasterTicket: masterTicket, FollowerTicket: followerTicket, Volume: ratio})
}

// finish orders the result deterministically.
func (p *planner) finish() Result {
	slices.SortStableFunc(p.res.Actions, func(a, b Action) int { return cmp.Compare(a.Kind.order(), b.Kind.order()) })
	slices.SortFunc(p.res.Track, byEntry)
	slices.SortFunc(p.res.Untrack, byEntry)
	return p.res
}

// followerSpec returns the follower's spec of a symbol, without its quote when the quote is
// stale (an unknown price is the master's for stops and sizing, and checks no deviation).
func (p *planner) followerSpec(name string) (broker.SymbolSpec, bool) {
	s, ok := p.in.Follower.Symbols[name]
	if ok && s.Name == "" {
		s.Name = name
	}
	if p.quotesStale {
		s.Bid, s.Ask = 0, 0
	}
	return s, ok
}

// resolve maps a master position's symbol to the follower's.
func (p *planner) resolve(m broker.Position) (string, bool) {
	return p.s.Symbols.ResolveIn(m.Symbol, p.in.Follower.Symbols)
}
