package follower

import (
	"time"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/internal/backoff"
	"github.com/snapcopier/copier/reconcile"
)

type runKind uint8

const (
	runNone      runKind = iota
	runEvent             // an in-order master event: each of its master's links planned in turn
	runReconcile         // a reconcile's plans, link by link
)

// execution is the plan being carried out: link after link, action after action, one order in
// flight at a time. It stops early when an order may not go on (gate closed, unknown
// outcome, lost account); the account is then dirty and the rest waits for a reconcile.
type execution struct {
	kind    runKind
	li      int  // the next link to take up
	stopped bool // stopped early
	sent    bool // event path: some link planned an action

	events []eventPlan                // event path: the events to plan, in the order they arrived
	ei     int                        // the event being planned
	plans  map[int64]reconcile.Result // reconcile path, by link id

	cur       int // the link being carried out (index in links), -1 between links
	actions   []reconcile.Action
	ai        int       // the action in flight
	linkStart time.Time // when the link's plan was taken up: its journal time
	reading   bool      // its netting positions are being read

	protGen int64 // the protection generation the plan was made under
}

// MaxAttempts is how many times in all an order refused for now (FailRetryable) is sent.
const MaxAttempts = 3

// resend is the order in flight's retries: an order refused for now is sent again after a
// pause (Ready.ResendIn); the run waits meanwhile, and other inputs are stepped.
type resend struct {
	waiting bool  // ResendDue is awaited
	err     error // the last attempt's
}

// advance sends the next action, or takes up the next link, or finishes the run.
func (c *Core) advance(now time.Time) {
	r := &c.run
	if r.kind == runNone {
		return
	}
	for {
		if r.cur >= 0 {
			if r.ai < len(r.actions) {
				c.order = Order{Link: c.links[r.cur].id, Action: r.actions[r.ai], Attempt: 1}
				c.resend = resend{}
				if r.kind == runEvent {
					c.order.Origin = &r.events[r.ei].origin
				}
				c.ready.Send = &c.order
				return
			}
			if c.follower.Info.Mode == broker.Netting && len(r.actions) > 0 && !r.reading {
				// Merges and reversals are the server's to compute: read them back.
				r.reading = true
				c.ready.ReadPositions = true
				return
			}
			r.cur, r.actions, r.ai, r.reading = -1, nil, 0, false
		}
		if !r.stopped && r.li >= len(c.links) && r.kind == runEvent && r.ei+1 < len(r.events) {
			// The next event, planned after the previous one's orders are done: each
			// plan sees the follower as the orders before it left it.
			r.ei, r.li = r.ei+1, 0
		}
		if r.stopped || r.li >= len(c.links) {
			c.finish(now)
			return
		}
		i := r.li
		r.li++
		l := &c.links[i]
		var res reconcile.Result
		switch r.kind {
		case runEvent:
			e := &r.events[r.ei]
			if l.masterID != e.master {
				continue
			}
			in := c.input(l, c.master(e.master), now)
			clear(c.actionRoom) // the last plan's actions are done: nothing of them kept alive
			in.ActionRoom = c.actionRoom
			res = reconcile.PlanAppliedEvent(*e.ev, in)
			c.actionRoom = res.Actions
			r.sent = r.sent || len(res.Actions) > 0
			if res.NeedsQuote() {
				// A late copy is checked against the follower's current price: a reconcile
				// reads it (and plans the copy) once this run is done.
				c.repairSoon(CauseQuote, 0)
			}
			if len(res.Skipped) > 0 || (c.skips != nil && e.ev.Kind == broker.Closed) {
				c.journalSkips(l, &res, false, e.ev, now)
			}
		case runReconcile:
			var found bool
			if res, found = r.plans[l.id]; !found {
				continue
			}
			if len(res.Skipped) > 0 || c.skips != nil {
				c.journalSkips(l, &res, true, nil, now)
			}
		}
		for _, t := range res.Track {
			c.track(t)
		}
		for _, t := range res.Untrack {
			c.untrack(t, now)
		}
		r.cur, r.actions, r.ai, r.linkStart = i, res.Actions, 0, now
	}
}

func (c *Core) input(l *link, mv *master, now time.Time) reconcile.Input {
	return reconcile.Input{Master: mv.state, Follower: c.follower, Link: l.link, TicketMap: c.ticketMap(l.id), Now: now, MasterClock: mv.clock.Offset()}
}

// finish ends the run: the status is written, and after a reconcile the next one is
// chained when something arrived during it.
func (c *Core) finish(now time.Time) {
	r := c.run
	c.run = execution{}
	switch r.kind {
	case runEvent:
		if r.sent {
			c.ready.WriteStatus = true // the positions changed: the writer keeps the latest
		}
	case runReconcile:
		if !r.stopped && !c.dirty {
			c.setPhase(PhaseCopying)
		}
		c.ready.WriteStatus = true
		c.note(Note{Kind: NoteReconcileDone, Cause: c.reconCause, Idle: !c.again && !c.dirty && c.afterRun == CauseNone})
		if c.again {
			cause := c.againCause
			if cause == CauseNone {
				cause = CauseAgain
			}
			c.dirty = true
			c.maybeReconcile(now, cause)
		}
	}
	if cause := c.afterRun; cause != CauseNone && !c.reconciling {
		// Asked for while this run waited for a resend.
		c.afterRun = CauseNone
		c.maybeReconcile(now, cause)
	}
}

// OrderDone is the outcome of the Ready.Send in flight.
func (c *Core) OrderDone(at At, out OrderOutcome) *Ready {
	now := c.beginAt(at)
	r := &c.run
	if r.cur < 0 || r.ai >= len(r.actions) || c.resend.waiting {
		panic("follower: OrderDone without an order in flight")
	}
	act := r.actions[r.ai]
	if f := FailureOf(out.Err); f == FailRetryable && c.order.Attempt < MaxAttempts {
		// Refused for now (requote, busy): sent again after a pause. The run waits; the
		// account takes other inputs meanwhile.
		c.resend.waiting, c.resend.err = true, out.Err
		c.ready.ResendIn = backoff.Delay(c.order.Attempt, 50*time.Millisecond, time.Second)
		noted := act // its own variable: taking act's address would move act to the heap on every order
		c.note(Note{Kind: NoteOrderRetry, Err: out.Err, Action: &noted, Failure: f})
		return c.done()
	}
	r.ai++
	l := &c.links[r.cur]
	switch {
	case out.Dropped:
		// Cut off from the database long enough that another node may own this account:
		// sending could duplicate its copies. The reconcile after the next renewal (or on
		// the new owner) catches up.
		c.dirty = true
		c.status.Dropped++
		c.setPhase(PhaseDirty)
		c.ready.Journal = append(c.ready.Journal, Journal{Time: now, Order: act.Summary(), MasterTicket: act.MasterTicket, Result: "dropped"})
		noted := act
		c.note(Note{Kind: NoteDropped, Action: &noted})
		r.stopped, r.cur = true, -1
	case out.Err != nil:
		c.ready.Journal = append(c.ready.Journal, Journal{Time: r.linkStart, Link: l.id, Order: act.Summary(), MasterTicket: act.MasterTicket,
			Ticket: out.Result.Ticket, Result: className(out.Err)})
		if FailureOf(out.Err) == FailUnknown {
			tr, un := act.UnknownOutcomeChanges(l.id, c.follower.Info.Mode)
			c.changeMap(now, tr, un)
		}
		if !c.onOrderError(act, out.Err) {
			r.stopped, r.cur = true, -1
		}
	default:
		c.orderFails = 0
		j := Journal{Time: r.linkStart, Link: l.id, Order: act.Summary(), MasterTicket: act.MasterTicket, Ticket: out.Result.Ticket, Result: "ok"}
		if r.kind == runEvent && !out.Result.ServerTime.IsZero() {
			o := &r.events[r.ei].origin
			j.Latency = out.Result.ServerTime.Sub(o.ServerTime)
			j.Quality, j.HasQuality = MeasureQuality(o, act, out.Result, out.SentAt, c.Point), true
		}
		c.ready.Journal = append(c.ready.Journal, j)
		c.status.LastCopy = r.linkStart
		if j.Latency > 0 {
			c.status.LastLag = j.Latency
		}
		c.ready.StatusChanged = true
		c.applyResult(l, act, out.Result)
		c.takeFunds(out.Result.Funds)
		tr, un := act.MapChanges(l.id, out.Result)
		c.changeMap(now, tr, un)
		c.seenAt = now
	}
	c.advance(now)
	return c.done()
}

// ResendDue: the pause before resending the order in flight (Ready.ResendIn) is over. It
// is sent again, unless a stop-out started or ended meanwhile: the plan it belongs to is
// then given up, and a reconcile plans again.
func (c *Core) ResendDue(at At) *Ready {
	now := c.beginAt(at)
	if !c.resend.waiting || c.stopped {
		return c.done() // given up meanwhile (a reload), or the account stopped
	}
	if c.run.protGen != c.protGen {
		c.abandon(now)
		return c.done()
	}
	c.resend.waiting = false
	c.order.Attempt++
	c.ready.Send = &c.order
	return c.done()
}

// abandon gives up the order waiting for a resend, and the rest of its plan: it is
// journalled with its last error, and the account is dirty. The run ends as any run
// stopped early does.
func (c *Core) abandon(now time.Time) {
	r := &c.run
	if !c.resend.waiting {
		return
	}
	c.resend.waiting = false
	act := r.actions[r.ai]
	r.ai++
	c.ready.Journal = append(c.ready.Journal, Journal{Time: r.linkStart, Link: c.links[r.cur].id, Order: act.Summary(),
		MasterTicket: act.MasterTicket, Result: className(c.resend.err)})
	c.setError(c.resend.err)
	c.note(Note{Kind: NoteOrderFailed, Err: c.resend.err, Action: &act, Failure: FailureOf(c.resend.err)})
	c.dirty = true
	r.stopped, r.cur = true, -1
	c.advance(now)
}

// PositionsRead is the outcome of a Ready.ReadPositions.
func (c *Core) PositionsRead(at At, ps []broker.Position, err error) *Ready {
	now := c.beginAt(at)
	if err != nil {
		c.dirty = true
	} else {
		c.follower.Positions = ps
	}
	c.advance(now)
	return c.done()
}

// onOrderError applies the broker-error policy to a failed order (its retries, if any,
// spent); it returns true when the plan may go on.
func (c *Core) onOrderError(act reconcile.Action, err error) bool {
	f := FailureOf(err)
	c.setError(err)
	c.note(Note{Kind: NoteOrderFailed, Err: err, Action: &act, Failure: f})
	switch f {
	case FailFenced:
		// The server has seen a newer token: another node owns this account now. The gate
		// stays closed until the account is claimed with a new epoch.
		c.dirty = true
		c.ready.Fence = true
		return false
	case FailExpired:
		// It reached the server after its trust ran out and was refused: nothing executed.
		// The reconcile after the next renewal (or on the new owner) catches up.
		c.dirty = true
		return false
	case FailPermanent:
		return true
	case FailRetryable:
		c.dirty = true // still refused after MaxAttempts: reconcile later
		return true
	case FailUnknown:
		// Never resend blindly: the order may have executed. Reconcile first, at once.
		c.repairSoon(CauseUnknown, 0)
		return false
	case FailMarketClosed:
		c.orderFails++
		c.repairSoon(CauseOrderFailed, backoff.Delay(c.orderFails, 5*time.Second, time.Minute))
		return false
	default: // FailOther: disconnected, unclassified
		c.orderFails++
		c.repairSoon(CauseOrderFailed, backoff.Delay(c.orderFails, 250*time.Millisecond, 30*time.Second))
		return false
	}
}

// applyResult keeps the cached follower state in step with an executed action.
func (c *Core) applyResult(l *link, act reconcile.Action, r broker.OrderResult) {
	ps := c.follower.Positions
	switch act.Kind {
	case reconcile.Open:
		if c.follower.Info.Mode != broker.Netting {
			c.follower.Positions = append(ps, broker.Position{Ticket: r.Ticket, Symbol: act.Symbol, Side: act.Side, Volume: r.Volume,
				OpenPrice: r.Price, SL: act.SL, TP: act.TP, Magic: act.Magic, Comment: act.Comment, OpenTime: r.ServerTime})
		}
	case reconcile.Close:
		for i := range ps {
			if ps[i].Ticket == act.FollowerTicket {
				c.follower.Positions = append(ps[:i], ps[i+1:]...)
				break
			}
		}
	case reconcile.PartialClose:
		for i := range ps {
			if ps[i].Ticket == act.FollowerTicket {
				ps[i].Volume = roundLots(ps[i].Volume - act.Volume)
			}
		}
	case reconcile.Modify:
		for i := range ps {
			if ps[i].Ticket == act.FollowerTicket {
				ps[i].SL, ps[i].TP = act.SL, act.TP
			}
		}
	}
}

// takeFunds keeps the follower's balance and equity as an order's result says them (where
// the trade server does): the next copy sized by balance or equity plans on them, not on
// the last reconcile's reading (minutes old on the event path: a close that halved the
// balance would size copies on the old one until the next repair). The status shows them.
func (c *Core) takeFunds(f broker.Funds) {
	if !f.Known || c.follower.Info.EquityUnknown {
		return
	}
	c.follower.Info.Balance, c.follower.Info.Equity = f.Balance, f.Equity
	c.status.Balance, c.status.Equity = f.Balance, f.Equity
}

// changeMap keeps the ticket map in step with changes and queues the rows to write.
func (c *Core) changeMap(now time.Time, track, untrack []reconcile.TicketMapEntry) {
	for _, t := range track {
		c.track(t)
	}
	for _, t := range untrack {
		c.untrack(t, now)
	}
}

func (c *Core) track(t reconcile.TicketMapEntry) {
	c.setTicket(t)
	c.ready.Tickets = append(c.ready.Tickets, TicketChange{Entry: t})
}

func (c *Core) untrack(t reconcile.TicketMapEntry, at time.Time) {
	c.unsetTicket(t.LinkID, t.MasterTicket)
	c.ready.Tickets = append(c.ready.Tickets, TicketChange{Entry: t, ClosedAt: at})
}

func roundLots(v float64) float64 {
	const q = 1e8
	if v < 0 {
		return 0
	}
	return float64(int64(v*q+0.5)) / q
}

func className(err error) string {
	if name := broker.ClassName(broker.ClassOf(err)); name != "" {
		return name
	}
	return "error"
}
