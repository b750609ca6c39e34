package follower

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/internal/backoff"
	"github.com/snapcopier/copier/internal/fewmap"
	"github.com/snapcopier/copier/reconcile"
	"github.com/snapcopier/copier/reconcile/protect"
)

// Options tune a Core.
type Options struct {
	// ReconcileEvery is the periodic repair: an idle account reconciles this long after
	// its last reconcile (0: never).
	ReconcileEvery time.Duration
	// ReconcileOffset, in (0, ReconcileEvery), replaces ReconcileEvery for the first
	// periodic repair after the account is claimed. Accounts claimed together would
	// otherwise repair together, every ReconcileEvery, in one burst that fills the
	// Reconciler's queue; each account's own offset spreads them over the period.
	ReconcileOffset time.Duration
}

// At is when an input happened and whether the account's lease gate was open then. The
// inputs that may ask for a reconcile carry it: a reconcile is asked for only while the
// lease is held (a closed gate would drop its plan). Orders need no more: the caller
// checks the gate immediately before every one.
type At struct {
	Now   time.Time
	Lease bool
}

// link is one enabled link of the follower.
type link struct {
	id, masterID int64
	link         reconcile.Link
	// closeOnly is the mode the operator set (the link's and the follower's, stricter of
	// the two); link.Settings.Protect.CloseOnly adds what stop-outs impose.
	closeOnly protect.CloseOnly
}

// master is what a follower knows of one master: its feed position and its last fetched
// state, kept current by the feed's events.
type master struct {
	attached       bool // its feed is connected
	known          bool // epoch/seq below are meaningful
	expectNewEpoch bool // the feed restarted: seq 1 of a new epoch is in order
	epoch, seq     int64
	state          reconcile.AccountState
	fetched        bool
	clock          ServerClock // its trade server's clock offset, from its events
}

// Core is one follower account's copy logic. It is not safe for concurrent use: one
// actor steps it.
type Core struct {
	opt Options

	version   int64
	connected bool
	links     []link
	masters   fewmap.Map[*master] // by master id: a follower copies one or a few
	follower  reconcile.AccountState
	fetched   bool // follower state came from a reconcile
	// tickets is each link's ticket map as the planner takes it: one entry per master
	// ticket, sorted by it. A change replaces the link's slice with a new one (copy on
	// write), so a slice handed to a plan or a reconcile is never changed under it; a map
	// of entries per link, sorted again for the plan after every change, cost a map walk,
	// a sort and two map writes per order. Keyed by link in a fewmap: the first link's
	// slice sits in the Core, read on every event without a map lookup's cache misses.
	tickets fewmap.Map[[]reconcile.TicketMapEntry]
	seenAt  time.Time // when the follower's positions were last read or changed by an order
	// skips are the master positions whose skip is journalled (journalSkips); nil until a
	// first one.
	skips map[skipKey]struct{}

	loading     bool
	loadFails   int
	reconciling bool
	reconCause  Cause // of the reconcile in flight
	again       bool
	againCause  Cause     // why the next reconcile is due, when a cause arrived during one
	expedited   bool      // the background reconcile in flight was asked to be expedited
	prioritized bool      // the reconcile in flight was asked to start ahead of all (Ready.Prioritize)
	periodicRan bool      // a periodic repair ran: the next comes ReconcileEvery after the last reconcile
	wantRepair  bool      // a turn for the periodic repair was asked for (Ready.WantRepair) ...
	wantedAt    time.Time // ... at this time
	dirty       bool      // a reconcile is due
	lastRecon   time.Time
	stopped     bool
	tokenRaised bool  // this epoch's token reached the trade server (TokenDone)
	tokenFor    Cause // the reconcile waiting for the token
	orderFails  int   // orders failed in a row without executing, for the repair backoff
	repairCause Cause // a failed order asked for a reconcile (Repair) that has not started
	afterRun    Cause // a reconcile asked for while a run waited for a resend: its end takes it up
	lease       bool  // the lease as of the input being stepped (At.Lease; false for inputs without it)

	guards map[int64]*guard // stop-outs by scope (0: the follower's own, else the link's)
	// equityUnknown: the last reading of the follower's account did not say its equity
	// (broker.AccountInfo.EquityUnknown); limits that need it hold new copies.
	equityUnknown bool
	protGen       int64 // bumped whenever a link's effective close-only mode changes
	reconProtGen  int64 // protGen when the reconcile in flight was asked for

	held       []eventPlan  // in-order events held back while the account is behind (EventBehind)
	one        [1]eventPlan // the run's events when nothing is held (no allocation per event)
	flushAsked bool         // Ready.FlushEvents was set and FlushEvents has not come yet

	run    execution // the plan being carried out
	order  Order     // the order in flight (Ready.Send points here)
	resend resend
	status Status
	ready  Ready
	notes  []Note

	// actionRoom is the array of the last event plan's actions, lent to the next event
	// plan: a plan is taken up only once the actions before it are done (advance), so one
	// array serves every event of the account instead of one allocation per order.
	actionRoom []reconcile.Action
}

// New returns the Core of an account just claimed.
func New(opt Options) *Core {
	return &Core{opt: opt}
}

// master is what the follower knows of master id, nil when none of its links copies it.
func (c *Core) master(id int64) *master {
	mv, _ := c.masters.Get(id)
	return mv
}

// Status is the account's status as of the last input.
func (c *Core) Status() Status { return c.status }

// Positions is the follower's positions as last seen, and when (ok: a reconcile fetched
// them, so they are worth storing).
func (c *Core) Positions() (ps []broker.Position, seenAt time.Time, ok bool) {
	return c.follower.Positions, c.seenAt, c.fetched
}

// Point is the follower's point size of symbol (0 when unknown).
func (c *Core) Point(symbol string) float64 { return c.follower.Symbols[symbol].Point }

// Guarded reports whether the follower has stop-out limits (its equity is to be watched).
func (c *Core) Guarded() bool { return len(c.guards) > 0 }

// Stopped reports whether Stop was stepped.
func (c *Core) Stopped() bool { return c.stopped }

// begin clears the Ready for the next input; a pending synchronous operation makes any
// input but its outcome a caller's bug.
func (c *Core) begin() {
	c.ready = Ready{Tickets: c.ready.Tickets[:0], Protection: c.ready.Protection[:0], Journal: c.ready.Journal[:0], Notes: c.notes[:0]}
	c.lease = false
}

// beginAt is begin for an input that carries At: the lease holds for this input only.
func (c *Core) beginAt(at At) time.Time {
	c.begin()
	c.lease = at.Lease
	return at.Now
}

func (c *Core) done() *Ready {
	c.notes = c.ready.Notes
	return &c.ready
}

func (c *Core) note(n Note) { c.ready.Notes = append(c.ready.Notes, n) }

func (c *Core) setPhase(p Phase) {
	if c.status.Phase != p {
		c.status.Phase = p
		c.ready.StatusChanged = true
	}
}

func (c *Core) setError(err error) {
	c.status.LastError = err.Error()
	c.ready.StatusChanged = true
}

// Start is the first input: the account was claimed (last is its status so far, as after
// a restart: counts and the last error go on from it). It loads.
func (c *Core) Start(last Status) *Ready {
	c.begin()
	c.status = last
	c.setPhase(PhaseStarting)
	c.dirty = true
	c.load()
	return c.done()
}

// Stop ends the account: nothing more is asked for.
func (c *Core) Stop() *Ready {
	c.begin()
	c.stopped, c.held = true, nil
	c.ready.Masters, c.ready.MastersChanged = nil, true
	return c.done()
}

// ConfigChanged: the account's configuration is at version now; reload when it is newer.
func (c *Core) ConfigChanged(version int64) *Ready {
	c.begin()
	if version != c.version {
		c.dirty = true
		c.load()
	}
	return c.done()
}

// RetryLoad: the pause after a failed load is over.
func (c *Core) RetryLoad() *Ready {
	c.begin()
	c.load()
	return c.done()
}

func (c *Core) load() {
	if c.loading || c.stopped {
		return
	}
	c.loading = true
	// Only the first load of an ownership reads the ticket map: afterwards the Core's own
	// map is ahead of the database, whose writes are queued (a reload that replaced it lost
	// the entries not yet written, and a tombstone lost is a closed copy opened again).
	first := c.version == 0
	c.ready.Load = &LoadAsk{Tickets: first, Connect: !c.connected}
}

// LoadFailed: the load (or the connect) failed; it is retried with backoff.
func (c *Core) LoadFailed(err error) *Ready {
	c.begin()
	c.loading = false
	c.loadFails++
	c.setPhase(PhaseFailed)
	c.setError(err)
	c.note(Note{Kind: NoteLoadFailed, Err: err})
	c.ready.WriteStatus = true
	c.ready.RetryLoadIn = backoff.Delay(c.loadFails, 500*time.Millisecond, 30*time.Second)
	return c.done()
}

// Loaded: the configuration is loaded and the follower's session connected.
func (c *Core) Loaded(at At, m Loaded) *Ready {
	now := c.beginAt(at)
	// A run waiting for a resend was planned under the links being replaced: it ends here
	// (while still loading, so its end asks for nothing) and this load's reconcile repairs.
	c.abandon(now)
	c.loading = false
	if c.stopped {
		return c.done()
	}
	c.loadFails = 0
	c.connected = true
	cause := CauseStart
	if c.version != 0 && c.version != m.Config.Version {
		cause = CauseConfig // a reload: counted once, under config
	}
	c.version = m.Config.Version
	c.links = c.links[:0]
	masters := make([]int64, 0, len(m.Config.Links))
	for _, l := range m.Config.Links {
		if !l.MasterEnabled {
			continue // master switched off: its copies stay as they are
		}
		settings, err := reconcile.ParseSettings(l.Settings)
		if err == nil {
			// The follower's own close-only mode holds on every link: the planner applies it.
			settings.Protect.CloseOnly = protect.Stricter(settings.Protect.CloseOnly, m.Config.CloseOnly)
			var lk reconcile.Link
			if lk, err = (reconcile.Link{ID: l.ID, Magic: l.Magic, Settings: settings}).Validated(); err == nil {
				c.links = append(c.links, link{id: l.ID, masterID: l.MasterID, link: lk, closeOnly: settings.Protect.CloseOnly})
				masters = appendOnce(masters, l.MasterID)
				continue
			}
		}
		err = fmt.Errorf("link %d: %w", l.ID, err)
		c.setError(err)
		c.note(Note{Kind: NoteBadConfig, Link: l.ID, Err: err})
	}
	c.masters.DeleteFunc(func(id int64, _ *master) bool { return !contains(masters, id) })
	for _, id := range masters {
		if c.master(id) == nil {
			c.masters.Set(id, &master{})
		}
	}
	for k := range c.skips {
		if !slices.ContainsFunc(c.links, func(l link) bool { return l.id == k.link }) {
			delete(c.skips, k) // a link no longer loaded plans nothing that would end them
		}
	}
	if m.WithTickets {
		c.tickets = ticketsByLink(m.Tickets)
	}
	if err := c.loadGuards(m.Protection); err != nil {
		c.setError(err)
		c.note(Note{Kind: NoteBadConfig, Err: err})
	}
	c.applyProtection(now)
	c.ready.WatchEquity = len(c.guards) > 0
	c.ready.Masters, c.ready.MastersChanged = masters, true
	c.note(Note{Kind: NoteLoaded, Version: c.version, Links: len(c.links)})
	c.dirty = true
	c.maybeReconcile(now, cause)
	return c.done()
}

func appendOnce(s []int64, v int64) []int64 {
	if contains(s, v) {
		return s
	}
	return append(s, v)
}

func contains(s []int64, v int64) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// MasterAttached: a master's feed is (re)connected. restarted says the feed started a new
// subscription, so events may have been missed; epoch/seq are the last event seen on the
// current subscription (0 when none yet). clock is the feed's estimate of the master
// server's clock offset, from the events it has passed on to any account: an account
// without a sample of its own takes it, so that its first reconcile (a takeover's) dates
// the master's positions by it.
func (c *Core) MasterAttached(at At, id int64, restarted bool, epoch, seq int64, clock ServerClock) *Ready {
	now := c.beginAt(at)
	mv := c.master(id)
	if mv == nil {
		return c.done()
	}
	mv.attached = true
	if !mv.clock.Known() {
		mv.clock = clock
	}
	c.note(Note{Kind: NoteFeedAttached, Master: id, Restarted: restarted})
	switch {
	case restarted:
		mv.known, mv.expectNewEpoch = false, true
		c.dirty = true
		c.maybeReconcile(now, CauseRestart)
		return c.done()
	case epoch != 0:
		mv.known, mv.epoch, mv.seq = true, epoch, seq
	default:
		mv.known, mv.expectNewEpoch = false, true
	}
	c.maybeReconcile(now, CauseStart)
	return c.done()
}

// classify places an event in its master's stream: in order (CauseNone), already seen
// (ok false), or out of order (the cause of the reconcile that repairs it).
func classify(mv *master, ev *broker.Event) (cause Cause, ok bool) {
	switch {
	case mv.known && ev.Epoch == mv.epoch && ev.Seq == mv.seq+1:
	case mv.known && ev.Epoch == mv.epoch && ev.Seq <= mv.seq:
		return CauseNone, false // already seen
	case !mv.known && mv.expectNewEpoch && ev.Seq == 1:
	case mv.known && ev.Epoch == mv.epoch, !mv.known && mv.expectNewEpoch:
		// A lost event of a known epoch, or of a new subscription (whose events start at
		// Seq 1): a gap, not an unknown epoch.
		return CauseGap, true
	default:
		return CauseEpoch, true
	}
	return CauseNone, true
}

// Event is one event of master id's feed, received by the node at received. An in-order
// event is planned and its orders sent at once (with the events held back before it);
// anything else marks the account dirty.
func (c *Core) Event(at At, id int64, ev *broker.Event, received time.Time) *Ready {
	return c.event(at, id, ev, received, false)
}

// EventBehind is Event for an account that has fallen behind its master's feed (more of
// its events wait in the mailbox): an in-order event is applied to the master's cached
// positions and held back, and the next Event, or FlushEvents, plans what is held back
// at once, each position once, from the latest master state (coalescing: an open and
// its close that both waited send nothing; ten stop moves send one). The caller must
// step FlushEvents after the waiting events when Ready.FlushEvents is set.
func (c *Core) EventBehind(at At, id int64, ev *broker.Event, received time.Time) *Ready {
	return c.event(at, id, ev, received, true)
}

// FlushEvents plans the events EventBehind held back, if any still wait.
func (c *Core) FlushEvents(at At) *Ready {
	now := c.beginAt(at)
	c.flushAsked = false
	// A run or a reconcile starts only with nothing held (it takes or drops what is), so
	// the middle cases are defensive: what is held is then left to a reconcile.
	switch {
	case len(c.held) == 0 || c.stopped:
	case c.dirty:
		c.held = nil // a reconcile is due: it reads the master afresh
	case c.reconciling:
		c.held, c.again = nil, true
	case c.run.kind != runNone:
		c.held, c.dirty = nil, true
		c.maybeReconcile(now, CauseGap)
	default:
		c.run = execution{kind: runEvent, cur: -1, events: c.takeHeld(), protGen: c.protGen}
		c.advance(now)
	}
	return c.done()
}

// eventPlan is an in-order master event to plan, with what its copies' quality is
// measured against.
type eventPlan struct {
	master int64
	ev     *broker.Event
	origin Origin
}

// takeHeld returns the held-back events to plan: of several events of one position only
// the last (its plan reads the latest master state, so it covers the earlier ones), with
// the first one's origin: the copy's latency counts from the earliest change it carries,
// and an open's slippage is measured against the master's open.
func (c *Core) takeHeld() []eventPlan {
	held := c.held
	c.held = nil
	type pos struct{ master, ticket int64 }
	first, last := make(map[pos]int, len(held)), make(map[pos]int, len(held))
	for i, e := range held {
		k := pos{e.master, e.ev.Position.Ticket}
		if _, ok := first[k]; !ok {
			first[k] = i
		}
		last[k] = i
	}
	out := make([]eventPlan, 0, len(last))
	for i, e := range held {
		k := pos{e.master, e.ev.Position.Ticket}
		if last[k] == i {
			e.origin = held[first[k]].origin
			out = append(out, e)
		}
	}
	return out
}

func (c *Core) event(at At, id int64, ev *broker.Event, received time.Time, behind bool) *Ready {
	now := c.beginAt(at)
	mv := c.master(id)
	if mv == nil || c.stopped {
		return c.done()
	}
	cause, ok := classify(mv, ev)
	if !ok {
		return c.done()
	}
	mv.known, mv.expectNewEpoch, mv.epoch, mv.seq = true, false, ev.Epoch, ev.Seq
	mv.clock.Observe(ev.ServerTime, received, now)
	if f := ev.Funds; f.Known && !mv.state.Info.EquityUnknown {
		// The master's balance and equity after the event: the ratio sizing of this and
		// later copies divides by them (a reconcile reads them again anyway).
		mv.state.Info.Balance, mv.state.Info.Equity = f.Balance, f.Equity
	}
	switch {
	case cause != CauseNone:
		c.dirty = true
		c.maybeReconcile(now, cause)
	case c.reconciling:
		c.again = true // the running reconcile may predate this event
		c.expedite()
	case c.run.kind != runNone:
		// A run waits for a resend: copying beside it would plan on a follower state that
		// misses its order. Repaired when it ends.
		c.dirty = true
		c.maybeReconcile(now, CauseGap)
	case c.dirty || !c.fetched || !mv.fetched:
		c.maybeReconcile(now, CauseGap)
	default:
		mv.state.Positions = applyEvent(mv.state.Positions, ev)
		e := eventPlan{master: id, ev: ev, origin: Origin{ServerTime: ev.ServerTime, Received: received, Kind: ev.Kind, Master: ev.Position}}
		if behind {
			c.held = append(c.held, e)
			if !c.flushAsked {
				c.flushAsked = true
				c.ready.FlushEvents = true
			}
			return c.done()
		}
		events := c.one[:]
		if c.one[0] = e; len(c.held) > 0 {
			c.held = append(c.held, e)
			events = c.takeHeld()
		}
		c.run = execution{kind: runEvent, cur: -1, events: events, protGen: c.protGen}
		c.advance(now)
	}
	return c.done()
}

// applyEvent keeps a master's cached positions in step with its feed, in place.
func applyEvent(ps []broker.Position, ev *broker.Event) []broker.Position {
	p := ev.Position
	for i := range ps {
		if ps[i].Ticket == p.Ticket {
			if ev.Kind == broker.Closed {
				return append(ps[:i], ps[i+1:]...)
			}
			ps[i] = p
			return ps
		}
	}
	if ev.Kind != broker.Closed {
		ps = append(ps, p)
	}
	return ps
}

// maybeReconcile asks for a reconcile when the account is dirty, loaded, all its masters
// are attached, and its lease is held (a closed gate would drop the plan anyway).
func (c *Core) maybeReconcile(now time.Time, cause Cause) {
	if c.stopped || c.loading || !c.connected || !c.dirty || c.tokenFor != CauseNone {
		return
	}
	if c.reconciling {
		c.again = true
		if c.againCause == CauseNone {
			c.againCause = cause // the rerun is counted under what caused it
		}
		c.repairCause = CauseNone
		c.expedite()
		if cause == CauseProtection && !c.prioritized {
			c.prioritized = true
			c.ready.Prioritize = true
		}
		return
	}
	if c.run.kind != runNone {
		// A run waits for a resend (Ready.ResendIn): its end takes this up.
		if c.afterRun == CauseNone {
			c.afterRun = cause
		}
		return
	}
	if !c.lease {
		c.setPhase(PhaseDirty)
		return // the next Tick after a renewal retries
	}
	for _, mv := range c.masters.All() {
		if !mv.attached {
			return // wait for the feed; MasterAttached retries
		}
	}
	if !c.tokenRaised {
		// The first broker request after a claim raises the token, before anything reads
		// positions to reconcile: from then on a broker that checks tokens refuses the
		// previous owner's stale orders.
		c.tokenFor = cause
		c.ready.RaiseToken = true
		return
	}
	c.startReconcile(now, cause)
}

func (c *Core) startReconcile(now time.Time, cause Cause) {
	ask := &Ask{Cause: cause, Masters: make([]int64, 0, c.masters.Len()), Links: make([]AskLink, 0, len(c.links))}
	for id := range c.masters.All() {
		ask.Masters = append(ask.Masters, id)
	}
	slices.Sort(ask.Masters) // a Ready never depends on map order
	for _, l := range c.links {
		al := AskLink{MasterID: l.masterID, Link: l.link, TicketMap: c.ticketMap(l.id)}
		if mv := c.master(l.masterID); mv != nil {
			al.MasterClock = mv.clock.Offset()
		}
		ask.Links = append(ask.Links, al)
	}
	c.reconciling, c.reconCause, c.again, c.againCause, c.dirty, c.repairCause, c.afterRun = true, cause, false, CauseNone, false, CauseNone, CauseNone
	c.held = nil // the reconcile reads the master afresh: it covers the events held back
	c.expedited, c.prioritized = false, false
	c.reconProtGen = c.protGen
	c.lastRecon = now
	c.status.Reconciles++
	c.setPhase(PhaseReconciling)
	c.ready.StatusChanged = true
	c.ready.Reconcile = ask
	c.note(Note{Kind: NoteReconcileStarted, Cause: cause})
}

// ticketMap returns link linkID's entries, one per master ticket, sorted by it. Callers
// only read it; a change of the link's map replaces it.
func (c *Core) ticketMap(linkID int64) []reconcile.TicketMapEntry {
	s, _ := c.tickets.Get(linkID)
	return s
}

// setTicket makes t the entry of its link and master ticket (replacing the entry there);
// unsetTicket drops the entry of (link, master ticket). Both put a new slice in place of
// the link's: one handed out earlier stays as it was.
func (c *Core) setTicket(t reconcile.TicketMapEntry) {
	old := c.ticketMap(t.LinkID)
	i, found := c.findTicket(old, t.MasterTicket)
	if found {
		s := slices.Clone(old)
		s[i] = t
		c.tickets.Set(t.LinkID, s)
		return
	}
	s := make([]reconcile.TicketMapEntry, len(old)+1)
	copy(s, old[:i])
	s[i] = t
	copy(s[i+1:], old[i:])
	c.tickets.Set(t.LinkID, s)
}

func (c *Core) unsetTicket(link, masterTicket int64) {
	old := c.ticketMap(link)
	i, found := c.findTicket(old, masterTicket)
	switch {
	case !found:
	case len(old) == 1:
		c.tickets.Delete(link)
	default:
		c.tickets.Set(link, slices.Concat(old[:i], old[i+1:]))
	}
}

// ticketsByLink groups stored entries as Core.tickets holds them: by link, one per master
// ticket (the last of a repeated one, as setting them one by one would), sorted by it.
func ticketsByLink(ts []reconcile.TicketMapEntry) fewmap.Map[[]reconcile.TicketMapEntry] {
	grouped := map[int64][]reconcile.TicketMapEntry{}
	for _, t := range ts {
		grouped[t.LinkID] = append(grouped[t.LinkID], t)
	}
	var out fewmap.Map[[]reconcile.TicketMapEntry]
	for link, s := range grouped {
		slices.SortStableFunc(s, func(a, b reconcile.TicketMapEntry) int { return cmp.Compare(a.MasterTicket, b.MasterTicket) })
		kept := s[:0]
		for i, t := range s {
			if i+1 == len(s) || s[i+1].MasterTicket != t.MasterTicket { // the last of its master ticket
				kept = append(kept, t)
			}
		}
		out.Set(link, kept)
	}
	return out
}

func (c *Core) findTicket(s []reconcile.TicketMapEntry, masterTicket int64) (int, bool) {
	return slices.BinarySearchFunc(s, masterTicket, func(e reconcile.TicketMapEntry, t int64) int { return cmp.Compare(e.MasterTicket, t) })
}

// TokenDone is the outcome of a Ready.RaiseToken: nil, or the broker's error; dropped when
// the gate was closed and nothing was sent.
func (c *Core) TokenDone(now time.Time, err error, dropped bool) *Ready {
	c.begin()
	cause := c.tokenFor
	c.tokenFor = CauseNone
	switch {
	case dropped:
		c.setPhase(PhaseDirty)
		return c.done() // the next Tick retries
	case err == nil:
		c.tokenRaised = true
	case FailureOf(err) == FailPermanent:
		// The server cannot take a token without an order (an older bridge server): its
		// first order carries the token instead, and the marker stays the backstop.
		c.tokenRaised = true
		c.note(Note{Kind: NoteTokenFailed, Err: err, Failure: FailPermanent})
	default:
		f := FailureOf(err)
		if f == FailFenced {
			c.ready.Fence = true // the token is stale at the trade server: account lost
		}
		c.note(Note{Kind: NoteTokenFailed, Err: err, Failure: f})
		c.dirty = true
		c.setPhase(PhaseDirty)
		return c.done()
	}
	c.startReconcile(now, cause)
	return c.done()
}

// Reconciled is the Reconciler's answer to the Ask in flight.
func (c *Core) Reconciled(at At, r *Reconciled) *Ready {
	now := c.beginAt(at)
	c.reconciling = false
	if c.stopped {
		return c.done()
	}
	if r.Err != nil {
		c.dirty = true
		c.setPhase(PhaseDirty)
		c.setError(r.Err)
		c.note(Note{Kind: NoteReconcileFailed, Err: r.Err})
		c.ready.WriteStatus = true
		c.note(Note{Kind: NoteReconcileDone, Cause: c.reconCause, Err: r.Err})
		return c.done()
	}
	c.follower, c.fetched, c.seenAt = r.Follower, true, now
	for id, st := range r.Masters {
		if mv := c.master(id); mv != nil {
			mv.state, mv.fetched = st, true
		}
	}
	c.status.Positions = len(r.Follower.Positions)
	c.readEquity(now, r.Follower.Info)
	c.run = execution{kind: runReconcile, cur: -1, plans: r.Plans, protGen: c.reconProtGen}
	if c.reconProtGen != c.protGen {
		// A stop-out started or ended since the plans were made (this reading or one
		// during the reconcile): they may copy what is no longer allowed. Plan again.
		c.run.stopped = true
		c.again, c.againCause = true, CauseProtection
	}
	c.advance(now)
	return c.done()
}

// Tick comes after every committed lease cycle: a dirty account whose gate is open again
// reconciles; an idle one reconciles when its periodic repair is due.
func (c *Core) Tick(at At) *Ready {
	now := c.beginAt(at)
	if c.loading || !c.connected || c.reconciling || c.stopped || c.run.kind != runNone {
		return c.done() // a running reconcile (or run) already repairs; chaining another would loop
	}
	if c.dirty && c.lease {
		cause := CauseGate
		if c.repairCause != CauseNone {
			cause = c.repairCause // a failed order asked first
		}
		c.maybeReconcile(now, cause)
		return c.done()
	}
	// A turn not given within a period is asked again (the Reconciler lost it, or gave it
	// to an incarnation of this actor that crashed).
	if c.repairDue(now) && (!c.wantRepair || now.Sub(c.wantedAt) >= c.opt.ReconcileEvery) {
		c.wantRepair, c.wantedAt = true, now
		c.ready.WantRepair = true
	}
	return c.done()
}

// NextTick is when a Tick could next do something, for a caller that ticks the account
// only then: ok false while none could until another input comes (the account is
// loading, unconnected, reconciling, stopped or carrying out a plan, and that input's
// step tells again); zero when one could at any tick (a dirty account reconciles at the
// next tick with the lease held); else when its periodic repair falls due, or, a turn for
// it having been asked, when the turn is asked again. It reads only what Tick does.
func (c *Core) NextTick() (at time.Time, ok bool) {
	if c.loading || !c.connected || c.reconciling || c.stopped || c.run.kind != runNone {
		return time.Time{}, false
	}
	if c.dirty {
		return time.Time{}, true
	}
	due := c.periodicDue()
	if due <= 0 || c.lastRecon.IsZero() {
		return time.Time{}, false
	}
	at = c.lastRecon.Add(due)
	if again := c.wantedAt.Add(c.opt.ReconcileEvery); c.wantRepair && again.After(at) {
		at = again
	}
	return at, true
}

// RepairTurn: the Reconciler has room for this account's periodic repair
// (Ready.WantRepair). The repair is asked for now if it is still due and nothing else
// runs; otherwise the turn passes (no Ready.Reconcile: the caller declines it).
func (c *Core) RepairTurn(at At) *Ready {
	now := c.beginAt(at)
	c.wantRepair = false
	if c.loading || !c.connected || c.reconciling || c.stopped || c.run.kind != runNone || !c.repairDue(now) {
		return c.done()
	}
	c.periodicRan = true
	c.dirty = true
	c.maybeReconcile(now, CausePeriodic)
	return c.done()
}

// repairDue reports whether the periodic repair is due.
func (c *Core) repairDue(now time.Time) bool {
	due := c.periodicDue()
	return due > 0 && !c.lastRecon.IsZero() && now.Sub(c.lastRecon) >= due
}

// periodicDue is how long after the last reconcile the next periodic repair is due (0:
// never): ReconcileOffset for the first one, so that accounts claimed together spread
// their repairs over the period.
func (c *Core) periodicDue() time.Duration {
	every := c.opt.ReconcileEvery
	if off := c.opt.ReconcileOffset; !c.periodicRan && off > 0 && off < every {
		return off
	}
	return every
}

// expedite asks, once per reconcile, that a background reconcile something now waits
// for be started ahead of the other background repairs.
func (c *Core) expedite() {
	if c.reconciling && c.reconCause == CausePeriodic && !c.expedited {
		c.expedited = true
		c.ready.Expedite = true
	}
}

// RepairDue: the pause a failed order asked for (Ready.Repair) is over.
func (c *Core) RepairDue(at At) *Ready {
	now := c.beginAt(at)
	if c.repairCause != CauseNone { // not already taken up by a reconcile
		c.dirty = true
		c.maybeReconcile(now, c.repairCause)
	}
	return c.done()
}

// EquityRead is a reading of the follower's equity (Ready.WatchEquity).
func (c *Core) EquityRead(at At, info broker.AccountInfo) *Ready {
	now := c.beginAt(at)
	if c.stopped {
		return c.done()
	}
	if c.readEquity(now, info) {
		c.dirty = true
		c.maybeReconcile(now, CauseProtection)
	}
	c.ready.WatchEquity = len(c.guards) > 0
	return c.done()
}

// EquityFailed: a reading of the equity (Ready.WatchEquity) failed. The next reading is
// asked for as after a good one: the limits are not given up on for a failed read.
func (c *Core) EquityFailed(err error) *Ready {
	c.begin()
	if c.stopped {
		return c.done()
	}
	c.note(Note{Kind: NoteEquityFailed, Err: err})
	c.ready.WatchEquity = len(c.guards) > 0
	return c.done()
}

// repairSoon asks for a reconcile after delay (0: as soon as the current input is
// done), as a later input, so a reconcile never starts in the middle of carrying out
// another's plan. The cause is kept until a reconcile starts, so whichever comes first
// (RepairDue or a Tick) counts the reconcile under it.
func (c *Core) repairSoon(cause Cause, delay time.Duration) {
	c.dirty = true
	if c.repairCause == CauseNone {
		c.repairCause = cause
	}
	c.ready.Repair, c.ready.RepairIn = true, delay
}
