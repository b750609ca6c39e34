package actors

import (
	"context"
	"errors"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/google/uuid"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/leasekeeper"
	"github.com/snapcopier/copier/reconcile"
	"github.com/snapcopier/copier/store"
)

// retryable errors are retried this many times in all, with growing pauses.
const maxAttempts = 3

// execute carries out one plan for one link: ticket-map changes, then each action, gated.
// It returns false when it stopped early (gate closed, unknown outcome, lost account);
// the account is then dirty and the rest waits for the next reconcile. origin is the master
// event the plan serves (nil for a reconcile's plan): its orders' latency and slippage are
// measured against it.
func (a *accountActor) execute(ctx actor.Context, l linkState, res reconcile.Result, origin *copyOrigin) bool {
	now := time.Now()
	var rows []store.TicketRow
	for _, t := range res.Track {
		rows = append(rows, a.track(t))
	}
	for _, t := range res.Untrack {
		rows = append(rows, a.untrack(t, now))
	}
	defer func() {
		if len(rows) > 0 {
			ctx.Send(a.e.writer, ticketUpdate{rows: rows})
		}
	}()
	for _, act := range res.Actions {
		sentAt := time.Now()
		result, err := a.send(act)
		if errors.Is(err, errGateClosed) {
			return false
		}
		entry := JournalEntry{Time: now, Action: act.String(), MasterTicket: act.MasterTicket, Ticket: result.Ticket, Result: "ok", Link: l.row.ID}
		if err != nil {
			entry.Result = errorClassName(err)
			a.board.journal(entry)
			if errors.Is(err, broker.ErrUnknownOutcome) {
				rows = append(rows, a.mapRows(act.UnknownOutcomeChanges(l.row.ID, a.follower.Info.Mode))...)
			}
			if !a.onOrderError(ctx, act, err) {
				return false
			}
			continue
		}
		if origin != nil && !result.ServerTime.IsZero() {
			entry.Latency = result.ServerTime.Sub(origin.serverTime)
			a.e.metrics.latency.observe(entry.Latency)
			entry.Quality, entry.HasQuality = measureQuality(origin, act, result, sentAt, a.follower.Symbols[act.Symbol].Point), true
			a.e.metrics.observeQuality(entry.Quality)
			a.board.addQuality(l.row.ID, entry.Quality)
		}
		a.board.journal(entry)
		a.board.update(func(s *AccountStatus) {
			s.LastCopy = now
			if entry.Latency > 0 {
				s.LastLag = entry.Latency
			}
		})
		rows = append(rows, a.applyResult(l, act, result)...)
		a.seenAt = time.Now()
	}
	if a.follower.Info.Mode == broker.Netting && len(res.Actions) > 0 {
		a.refreshFollower()
	}
	return true
}

var errGateClosed = errors.New("lease gate closed")

// send checks the gate immediately before every attempt, then sends the order with the
// lease epoch and a request id derived from what the order is (requestID): the same
// after an unknown outcome, new after any known one. Retryable errors are retried with
// growing pauses.
//
// The gate check returns a ticket (epoch and trust left, read together once); the order's
// token, its context deadline (the earlier of the order timeout and the trust) and the
// deadline it carries to the trade server all come from that one ticket, never from a
// later reading: an order that waits in a queue past its trust is refused by the receiver,
// and cannot pick up a newer epoch's trust if the node claims the account again meanwhile.
func (a *accountActor) send(act reconcile.Action) (broker.OrderResult, error) {
	var err error
	for attempt := 1; attempt <= maxAttempts; attempt++ {
		if attempt > 1 {
			time.Sleep(backoff(attempt-1, 50*time.Millisecond, time.Second))
		}
		tk, open := a.gate.Check()
		if !open || a.e.halted.Load() {
			// Cut off from the database long enough that another node may own this account:
			// sending could duplicate its copies. The reconcile after the next renewal (or
			// on the new owner) catches up.
			a.dirty = true
			a.e.metrics.DroppedWork.Add(1)
			a.board.update(func(s *AccountStatus) { s.Phase, s.Dropped = PhaseDirty, s.Dropped+1 })
			a.board.journal(JournalEntry{Time: time.Now(), Action: act.String(), MasterTicket: act.MasterTicket, Result: "dropped"})
			a.e.log.Warn().Int64("account", a.id).Int64("epoch", a.epoch).Str("dropped", act.String()).Msg("lease not confirmed, order not sent")
			return broker.OrderResult{}, errGateClosed
		}
		key := requestKey(a.id, tk.Epoch, act)
		var res broker.OrderResult
		res, err = a.call(act, tk, a.sent.next(key))
		a.sent.settled(key, err)
		if err == nil {
			a.e.metrics.OrdersOK.Add(1)
			a.orderFails = 0
			return res, nil
		}
		if !errors.Is(err, broker.ErrRetryable) {
			break
		}
		a.e.metrics.OrdersRetryable.Add(1)
	}
	return broker.OrderResult{}, err
}

// orderFor is the Order of one broker request under ticket tk, with the context that
// bounds it: both end with the trust of tk (and the context with the order timeout too).
func (a *accountActor) orderFor(tk leasekeeper.Ticket, id uuid.UUID) (context.Context, context.CancelFunc, broker.Order) {
	ctx, cancel := context.WithTimeout(context.Background(), min(a.e.cfg.OrderTimeout, tk.Remaining))
	o := broker.Order{RequestID: id, Token: tk.Epoch, Node: a.e.cfg.NodeID, Deadline: time.Now().Add(tk.Remaining)}
	return ctx, cancel, o
}

func (a *accountActor) call(act reconcile.Action, tk leasekeeper.Ticket, id uuid.UUID) (broker.OrderResult, error) {
	ctx, cancel, o := a.orderFor(tk, id)
	defer cancel()
	switch act.Kind {
	case reconcile.Open:
		return a.session.Open(ctx, act.OpenRequest(o))
	case reconcile.Close, reconcile.PartialClose:
		return a.session.ClosePosition(ctx, act.CloseRequest(o))
	case reconcile.Modify:
		return a.session.Modify(ctx, act.ModifyRequest(o))
	}
	return broker.OrderResult{}, broker.NewError(broker.ErrPermanent, broker.CodeInvalidRequest, "unknown action %v", act.Kind)
}

// raiseToken makes the account's first broker request after a claim carry the new token
// (Session.Fence), before anything reads positions to reconcile: from then on a broker that
// checks tokens refuses the previous owner's stale orders. It reports whether the token
// is up; on false the account stays dirty and a later tick tries again.
func (a *accountActor) raiseToken() bool {
	if a.tokenRaised {
		return true
	}
	tk, open := a.gate.Check()
	if !open || a.e.halted.Load() {
		return false
	}
	ctx, cancel, o := a.orderFor(tk, uuid.New())
	defer cancel()
	err := a.session.Fence(ctx, o)
	switch {
	case err == nil:
		a.tokenRaised = true
		return true
	case errors.Is(err, broker.ErrFenced):
		a.e.metrics.OrdersFenced.Add(1)
		a.gate.Fence()
		a.e.log.Warn().Err(err).Int64("account", a.id).Int64("epoch", a.epoch).Msg("token is stale at the trade server; account lost")
	case errors.Is(err, broker.ErrPermanent):
		// The server cannot take a token without an order (an older bridge server): its
		// first order carries the token instead, and the marker stays the backstop.
		a.tokenRaised = true
		a.e.log.Info().Err(err).Int64("account", a.id).Msg("trade server cannot raise the fencing token ahead of an order")
		return true
	default:
		a.e.log.Warn().Err(err).Int64("account", a.id).Int64("epoch", a.epoch).Msg("could not raise the fencing token; retrying")
	}
	a.dirty = true
	return false
}

// repairDue asks for a reconcile after an order failed on any path (event or plan), for
// the accountActor's repairCause.
type repairDue struct{}

// repairSoon asks the Reconciler after delay (0: as soon as the current message is done),
// as a message, so a reconcile never starts in the middle of executing another's plan.
//
// The cause is kept until a reconcile starts, so whichever comes first (this message or a
// tick) counts the reconcile under it.
func (a *accountActor) repairSoon(ctx actor.Context, cause string, delay time.Duration) {
	a.dirty = true
	if a.repairCause == "" {
		a.repairCause = cause
	}
	self := ctx.Self()
	if delay <= 0 {
		ctx.Send(self, repairDue{})
		return
	}
	root := ctx.ActorSystem().Root
	time.AfterFunc(delay, func() { root.Send(self, repairDue{}) })
}

// onOrderError records a failed order; it returns true when the plan may go on.
func (a *accountActor) onOrderError(ctx actor.Context, act reconcile.Action, err error) bool {
	m := a.e.metrics
	log := a.e.log.Warn().Err(err).Int64("account", a.id).Int64("epoch", a.epoch).Str("action", act.String())
	a.board.update(func(s *AccountStatus) { s.LastError = err.Error() })
	switch {
	case errors.Is(err, broker.ErrFenced):
		// The server has seen a newer token: another node owns this account now. The gate
		// stays closed until the account is claimed with a new epoch.
		m.OrdersFenced.Add(1)
		a.dirty = true
		a.gate.Fence()
		log.Msg("order rejected: fencing token is stale; account lost")
		return false
	case errors.Is(err, broker.ErrExpired):
		// It reached the server after its trust ran out and was refused: nothing executed.
		// The reconcile after the next renewal (or on the new owner) catches up.
		m.OrdersExpired.Add(1)
		a.dirty = true
		log.Msg("order refused: it arrived after the lease trust ended")
		return false
	case errors.Is(err, broker.ErrPermanent):
		m.OrdersPermanent.Add(1)
		log.Msg("order rejected permanently")
		return true
	case errors.Is(err, broker.ErrRetryable):
		a.dirty = true
		log.Msg("order still refused after retries; reconcile later")
		return true
	case errors.Is(err, broker.ErrUnknownOutcome):
		// Never resend blindly: the order may have executed. Reconcile first, at once.
		m.OrdersUnknown.Add(1)
		a.repairSoon(ctx, causeUnknown, 0)
		log.Msg("order outcome unknown; reconciling")
		return false
	case errors.Is(err, broker.ErrMarketClosed):
		m.OrdersOther.Add(1)
		a.orderFails++
		a.repairSoon(ctx, causeOrderFailed, backoff(a.orderFails, 5*time.Second, time.Minute))
		log.Msg("market closed; reconcile later")
		return false
	default: // disconnected, unclassified
		m.OrdersOther.Add(1)
		a.orderFails++
		a.repairSoon(ctx, causeOrderFailed, backoff(a.orderFails, 250*time.Millisecond, 30*time.Second))
		log.Msg("order failed; reconcile after a pause")
		return false
	}
}

// applyResult keeps the cached follower state and the ticket map in step with an executed
// action, and returns the ticket-map rows to write.
func (a *accountActor) applyResult(l linkState, act reconcile.Action, r broker.OrderResult) []store.TicketRow {
	ps := a.follower.Positions
	switch act.Kind {
	case reconcile.Open:
		if a.follower.Info.Mode != broker.Netting {
			a.follower.Positions = append(ps, broker.Position{Ticket: r.Ticket, Symbol: act.Symbol, Side: act.Side, Volume: r.Volume,
				OpenPrice: r.Price, SL: act.SL, TP: act.TP, Magic: act.Magic, Comment: act.Comment, OpenTime: r.ServerTime})
		}
	case reconcile.Close:
		for i := range ps {
			if ps[i].Ticket == act.FollowerTicket {
				a.follower.Positions = append(ps[:i], ps[i+1:]...)
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
	return a.mapRows(act.MapChanges(l.row.ID, r))
}

// mapRows keeps the cached ticket map in step with changes and returns the rows to write.
func (a *accountActor) mapRows(track, untrack []reconcile.TicketMapEntry) []store.TicketRow {
	rows := make([]store.TicketRow, 0, len(track)+len(untrack))
	for _, t := range track {
		rows = append(rows, a.track(t))
	}
	for _, t := range untrack {
		rows = append(rows, a.untrack(t, time.Now()))
	}
	return rows
}

func (a *accountActor) track(t reconcile.TicketMapEntry) store.TicketRow {
	a.ticketsOf(t.LinkID)[t.MasterTicket] = t
	return store.TicketRow{FollowerID: a.id, Epoch: a.epoch, LinkID: t.LinkID, MasterTicket: t.MasterTicket, FollowerTicket: t.FollowerTicket, Volume: t.Volume}
}

func (a *accountActor) untrack(t reconcile.TicketMapEntry, at time.Time) store.TicketRow {
	delete(a.ticketsOf(t.LinkID), t.MasterTicket)
	return store.TicketRow{FollowerID: a.id, Epoch: a.epoch, LinkID: t.LinkID, MasterTicket: t.MasterTicket, FollowerTicket: t.FollowerTicket, Volume: t.Volume, ClosedAt: at}
}

// refreshFollower re-reads positions after orders on a netting account, where merges and
// reversals are the server's to compute.
func (a *accountActor) refreshFollower() {
	ctx, cancel := context.WithTimeout(context.Background(), a.e.cfg.OrderTimeout)
	defer cancel()
	ps, err := a.session.Positions(ctx)
	if err != nil {
		a.dirty = true
		return
	}
	a.follower.Positions = ps
}

func roundLots(v float64) float64 {
	const q = 1e8
	if v < 0 {
		return 0
	}
	return float64(int64(v*q+0.5)) / q
}

func errorClassName(err error) string {
	if errors.Is(err, errGateClosed) {
		return "dropped"
	}
	if name := broker.ClassName(broker.ClassOf(err)); name != "" {
		return name
	}
	return "error"
}
