package broker

import (
	"context"
	"sync/atomic"
	"time"
)

// CallTrace receives the times one broker call passed the stages a Session
// implementation has inside it: a free request slot taken, the request handed to the
// network. It is for load tests that account for every stage of a copy; a Session that
// has no such stages leaves it empty. Safe for concurrent use (a connection's writer
// stamps Written while the caller waits).
type CallTrace struct {
	slot, written atomic.Int64 // Unix nanoseconds; 0 when not reached
}

// MarkSlot records that the call holds a request slot now.
func (t *CallTrace) MarkSlot(at time.Time) { t.slot.Store(at.UnixNano()) }

// MarkWritten records that the request was handed to the network now.
func (t *CallTrace) MarkWritten(at time.Time) { t.written.Store(at.UnixNano()) }

// Slot and Written return the recorded times in Unix nanoseconds (0: not reached).
func (t *CallTrace) Slot() int64    { return t.slot.Load() }
func (t *CallTrace) Written() int64 { return t.written.Load() }

type callTraceKey struct{}

// WithCallTrace returns ctx carrying t for the Session call made with it.
func WithCallTrace(ctx context.Context, t *CallTrace) context.Context {
	return context.WithValue(ctx, callTraceKey{}, t)
}

// CallTraceFrom returns the CallTrace ctx carries, or nil.
func CallTraceFrom(ctx context.Context) *CallTrace {
	t, _ := ctx.Value(callTraceKey{}).(*CallTrace)
	return t
}
