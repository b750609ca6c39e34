package actors

import (
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/reconcile"
)

// maxRequestKeys bounds the per-account memory of orders with an unknown outcome; past
// it, those that can no longer execute are forgotten.
const maxRequestKeys = 4096

// requestKey names what an order is: the follower, the action (kind, master and follower
// ticket, symbol, side, volume, stops) and the lease epoch. Two sends of the same action
// in the same epoch share the key.
func requestKey(follower, epoch int64, act reconcile.Action) string {
	return fmt.Sprintf("%d/%d/%d/%d/%d/%s/%d/%.8f/%g/%g", follower, epoch, act.Kind, act.MasterTicket, act.FollowerTicket,
		act.Symbol, act.Side, act.Volume, act.SL, act.TP)
}

// requestIDs chooses orders' request ids (the FIX ClOrdID). Every send gets a new random
// id, so ids never repeat: not across actor incarnations or memory resets either (an id
// counted from the key once repeated after a respawn, and a de-duplicating venue answered
// an equal partial close with the earlier one's fill). The one exception is the resend of
// an order whose outcome is unknown while that order may still execute: it carries the
// first order's id, so a de-duplicating venue answers with that order's status instead
// of trading twice. It also tells the account, at its stop, until when such an order may
// still execute (inFlight).
type requestIDs struct {
	// margin is added to an order's deadline for the trade server's clock: the clock skew
	// and drift the lease tolerates.
	margin  time.Duration
	pending map[string]pendingOrder // by request key
}

// pendingOrder is an order whose outcome is unknown: its id, and until when (on the
// gate's clock) it may still execute.
type pendingOrder struct {
	id    uuid.UUID
	until time.Time
}

// remembers reports whether some order's outcome is unknown: only then does a send need
// its request key.
func (r *requestIDs) remembers() bool { return len(r.pending) > 0 }

// next returns the request id for a send of key at now (a gate-clock reading); an empty
// key (nothing remembered) always gets a new id.
func (r *requestIDs) next(key string, now time.Time) uuid.UUID {
	if p, ok := r.pending[key]; ok && key != "" && now.Before(p.until) {
		return p.id
	}
	return newRequestID()
}

// settled records the outcome of the send of key with id under a ticket whose trust ends
// at deadline (the order's deadline on the wire), at now. An unknown outcome keeps the id
// for a resend until the order can no longer execute; any other outcome forgets it.
func (r *requestIDs) settled(key string, id uuid.UUID, deadline, now time.Time, err error) {
	if !unknownOutcome(err) {
		delete(r.pending, key)
		return
	}
	if r.pending == nil {
		r.pending = map[string]pendingOrder{}
	}
	if len(r.pending) >= maxRequestKeys {
		r.forget(now)
	}
	until := deadline.Add(r.margin)
	if p, ok := r.pending[key]; ok && p.id == id && p.until.After(until) {
		until = p.until // a resend of the same order: the first may execute until then
	}
	r.pending[key] = pendingOrder{id: id, until: until}
}

// forget drops the orders that can no longer execute at now.
func (r *requestIDs) forget(now time.Time) {
	for k, p := range r.pending {
		if !now.Before(p.until) {
			delete(r.pending, k)
		}
	}
}

// inFlight reports the latest moment an order with an unknown outcome may still execute,
// when that is after now: until then the account's lease must be neither renewed nor
// released (a new owner could copy beside it).
func (r *requestIDs) inFlight(now time.Time) (time.Time, bool) {
	var last time.Time
	for _, p := range r.pending {
		if p.until.After(last) {
			last = p.until
		}
	}
	return last, last.After(now)
}

// unknownOutcome reports whether err leaves the order's outcome unknown (an error of no
// known class included).
func unknownOutcome(err error) bool {
	return broker.ClassOf(err) == broker.ErrUnknownOutcome || (err != nil && broker.ClassOf(err) == nil)
}
