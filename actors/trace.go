package actors

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/internal/copytrace"
	"github.com/snapcopier/copier/reconcile/follower"
)

// orderTrace is what an AccountActor notes of the order it is sending, for
// Deps.TraceCopies; it is zero and untouched when tracing is off.
type orderTrace struct {
	dequeued     time.Time // the message being handled was taken up
	orderQueued  time.Time // dequeued, for the message that asked for the order's first attempt
	reconAsked   time.Time // the last reconcile asked of the Reconciler
	reconCause   follower.Cause
	reconStarted time.Time // ... and when the Reconciler started and finished it
	reconDone    time.Time
	attempts     int
	requestID    uuid.UUID         // of the last attempt
	call         *broker.CallTrace // of the last attempt
}

// traceContext has the broker stamp the call's stages into the order's trace.
func (a *accountActor) traceContext(ctx context.Context, id uuid.UUID) context.Context {
	if a.e.trace == nil {
		return ctx
	}
	a.tr.attempts++
	a.tr.requestID, a.tr.call = id, new(broker.CallTrace)
	return broker.WithCallTrace(ctx, a.tr.call)
}

// traceStart begins the trace of an order at its first attempt; a resend goes on with it.
func (a *accountActor) traceStart(o *follower.Order) {
	if a.e.trace == nil || o.Attempt > 1 {
		return
	}
	a.tr.attempts, a.tr.call, a.tr.orderQueued = 0, nil, a.tr.dequeued
}

// traceOrder records the order just sent (o, with outcome out) when tracing is on.
func (a *accountActor) traceOrder(o *follower.Order, out follower.OrderOutcome) {
	if a.e.trace == nil || out.Dropped || a.tr.call == nil {
		return
	}
	nanos := func(t time.Time) int64 {
		if t.IsZero() {
			return 0
		}
		return t.UnixNano()
	}
	rec := copytrace.Record{
		RequestID: a.tr.requestID, Account: a.id, Action: o.Action.Kind.String(), Attempts: a.tr.attempts,
		Dequeued: nanos(a.tr.orderQueued), Send: nanos(out.SentAt), Slot: a.tr.call.Slot(), Written: a.tr.call.Written(),
		Replied: a.e.now().UnixNano(), Executed: out.Err == nil,
	}
	if o.Origin != nil {
		rec.Path = copytrace.PathEvent
		rec.EventServer, rec.Received = nanos(o.Origin.ServerTime), nanos(o.Origin.Received)
	} else {
		rec.Path, rec.Cause = copytrace.PathReconcile, a.tr.reconCause.String()
		rec.ReconAsked, rec.ReconStarted, rec.ReconDone = nanos(a.tr.reconAsked), nanos(a.tr.reconStarted), nanos(a.tr.reconDone)
	}
	a.e.trace.Add(rec)
	a.tr.attempts, a.tr.call = 0, nil
}
