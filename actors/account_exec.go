package actors

import (
	"context"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/google/uuid"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/internal/lazydeadline"
	"github.com/snapcopier/copier/leasekeeper"
	"github.com/snapcopier/copier/reconcile"
	"github.com/snapcopier/copier/reconcile/follower"
)

// send is one attempt of an order: it checks the gate immediately before, then sends the
// order with the lease epoch and a request id (requestIDs: new for every attempt, the
// same for the resend of an order whose outcome is unknown while it may still execute).
// A closed gate (or a halted node) sends nothing: Dropped. Whether and when an order
// refused for now is sent again is the Core's to say (Ready.ResendIn): the mailbox never
// waits.
//
// The gate check returns a ticket (epoch and trust left, read together once); the order's
// token, its context deadline (the earlier of the order timeout and the trust) and the
// deadline it carries to the trade server all come from that one ticket, never from a
// later reading: an order that waits in a queue past its trust is refused by the receiver,
// and cannot pick up a newer epoch's trust if the node claims the account again meanwhile.
func (a *accountActor) send(act reconcile.Action) follower.OrderOutcome {
	tk, open := a.gate.Check()
	if !open || a.e.halted.Load() {
		// Cut off from the database long enough that another node may own this account:
		// sending could duplicate its copies.
		return follower.OrderOutcome{Dropped: true}
	}
	// The request key (and a second reading of the gate's clock) is only needed while an
	// unknown outcome is remembered or when this order's is unknown.
	var key string
	if a.sent.remembers() {
		key = requestKey(a.id, tk.Epoch, act)
	}
	id := a.sent.next(key, tk.At)
	out := follower.OrderOutcome{SentAt: a.e.now()}
	out.Result, out.Err = a.call(act, tk, id, out.SentAt)
	if key != "" || unknownOutcome(out.Err) {
		if key == "" {
			key = requestKey(a.id, tk.Epoch, act)
		}
		a.sent.settled(key, id, tk.Until, a.e.clock.Now(), out.Err)
	}
	if out.Err == nil {
		a.e.metrics.OrdersOK.Add(1)
	}
	return out
}

// orderFor is the Order of one broker request under ticket tk, with the context that
// bounds it: both end with the trust of tk (and the context with the order timeout too).
// Both derive from the ticket's end (tk.Until), never from the trust left at the check:
// a pause since the check shortens them. The wall clock is read before the gate's, so
// the wire deadline is never after the trust's end: wall is a reading taken after the gate
// check and before this. The context arms its timer only when the broker waits on Done
// (lazydeadline): the in-process simulator never does.
func (a *accountActor) orderFor(tk leasekeeper.Ticket, id uuid.UUID, wall time.Time) (*lazydeadline.Context, broker.Order) {
	left := tk.Left()
	ctx := lazydeadline.WithTimeout(min(a.e.cfg.OrderTimeout, left))
	o := broker.Order{RequestID: id, Token: tk.Epoch, Node: a.e.cfg.NodeID, Deadline: wall.Add(left)}
	return ctx, o
}

func (a *accountActor) call(act reconcile.Action, tk leasekeeper.Ticket, id uuid.UUID, wall time.Time) (broker.OrderResult, error) {
	octx, o := a.orderFor(tk, id, wall)
	defer octx.Cancel()
	ctx := a.traceContext(octx, id)
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

// raiseToken makes the session carry this epoch's token (Session.Fence), through the gate
// like an order: dropped when the gate is closed.
func (a *accountActor) raiseToken() (err error, dropped bool) {
	tk, open := a.gate.Check()
	if !open || a.e.halted.Load() {
		return nil, true
	}
	ctx, o := a.orderFor(tk, newRequestID(), a.e.now())
	defer ctx.Cancel()
	return a.session.Fence(ctx, o), false
}

func (a *accountActor) tokenFailed(err error, f follower.Failure) {
	log := a.e.log.Warn().Err(err).Int64("account", a.id).Int64("epoch", a.epoch)
	switch f {
	case follower.FailFenced:
		a.e.metrics.OrdersFenced.Add(1)
		log.Msg("token is stale at the trade server; account lost")
	case follower.FailPermanent:
		a.e.log.Info().Err(err).Int64("account", a.id).Msg("trade server cannot raise the fencing token ahead of an order")
	default:
		log.Msg("could not raise the fencing token; retrying")
	}
}

// readPositions re-reads the follower's positions after orders on a netting account,
// where merges and reversals are the server's to compute.
func (a *accountActor) readPositions() ([]broker.Position, error) {
	ctx, cancel := context.WithTimeout(context.Background(), a.e.cfg.OrderTimeout)
	defer cancel()
	return a.session.Positions(ctx)
}

// repairDue steps follower.Core.RepairDue: a failed order asked for a reconcile.
type repairDue struct{}

// resendDue steps follower.Core.ResendDue: the order refused for now is to be sent again.
type resendDue struct{}

// sendAfter sends msg to this actor after delay (0: as soon as the current message is
// done): the Core's pauses end as inputs, never as a wait in the mailbox.
func (a *accountActor) sendAfter(ctx actor.Context, delay time.Duration, msg any) {
	self := ctx.Self()
	if delay <= 0 {
		ctx.Send(self, msg)
		return
	}
	root := ctx.ActorSystem().Root
	time.AfterFunc(delay, func() { root.Send(self, msg) })
}

// orderFailed counts and logs an order that did not execute, by the Core's reading of its
// error (the Core decided what follows).
func (a *accountActor) orderFailed(act *reconcile.Action, err error, f follower.Failure) {
	m := a.e.metrics
	log := a.e.log.Warn().Err(err).Int64("account", a.id).Int64("epoch", a.epoch).Str("action", act.String())
	switch f {
	case follower.FailFenced:
		m.OrdersFenced.Add(1)
		log.Msg("order rejected: fencing token is stale; account lost")
	case follower.FailExpired:
		m.OrdersExpired.Add(1)
		log.Msg("order refused: it arrived after the lease trust ended")
	case follower.FailPermanent:
		m.OrdersPermanent.Add(1)
		log.Msg("order rejected permanently")
	case follower.FailRetryable:
		m.OrdersRetryable.Add(1)
		log.Msg("order still refused after retries; reconcile later")
	case follower.FailUnknown:
		m.OrdersUnknown.Add(1)
		log.Msg("order outcome unknown; reconciling")
	case follower.FailMarketClosed:
		m.OrdersOther.Add(1)
		log.Msg("market closed; reconcile later")
	default: // disconnected, unclassified
		m.OrdersOther.Add(1)
		log.Msg("order failed; reconcile after a pause")
	}
}
