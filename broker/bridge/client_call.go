package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/snapcopier/copier/broker"
)

// deadlineMargin is added to the caller's remaining time in a request's timeout_ms. The
// caller's own deadline decides when a call failed (and sends a cancel frame); the
// server's deadline is a backstop a little later, so that a server which honours its
// deadline cannot answer "too late" in a race with the caller giving up.
const deadlineMargin = time.Second

// States of a call. The writer moves a call from queued to written just before writing
// it; a caller that gives up moves it from queued to abandoned. Whichever wins decides
// whether the request can have reached the server.
const (
	callQueued int32 = iota
	callWritten
	callAbandoned
)

// call is one request waiting for its response.
type call struct {
	id     uint64
	method string
	state  atomic.Int32
	done   chan callResult   // capacity 1; exactly one result is ever sent
	trace  *broker.CallTrace // the caller's, or nil
}

// callResult is a response frame, or the error that ended the connection first.
type callResult struct {
	f   *inFrame
	err error
}

// do sends a request on cc and waits for its response. ctx must carry a deadline; it is
// sent along so the server gives up when the caller does. Errors are classified:
//   - the request was not written (no connection, no free in-flight slot before ctx
//     ended, ctx ended while it was queued, or the connection was lost first):
//     broker.ErrDisconnected, safe to resend;
//   - it was written, then ctx ended or the connection was lost: broker.ErrUnknownOutcome
//     for an order, broker.ErrDisconnected for any other request;
//   - the server answered with an error: that error, class and code intact.
//
// Errors caused by ctx also wrap ctx.Err().
func (cc *clientConn) do(ctx context.Context, method string, session uint64, params, result any) error {
	if err := ctx.Err(); err != nil {
		return classified(broker.ErrDisconnected, broker.CodeNoConnection, "bridge: "+method+": not sent: context ended", err)
	}
	select {
	case cc.slots <- struct{}{}:
	case <-cc.done:
		return cc.disconnected(method)
	case <-ctx.Done():
		return classified(broker.ErrDisconnected, broker.CodeNoConnection,
			"bridge: "+method+": not sent: no free request slot before the context ended", ctx.Err())
	}
	if t := broker.CallTraceFrom(ctx); t != nil {
		t.MarkSlot(time.Now())
	}
	cl, err := cc.start(ctx, method, session, params)
	if err != nil {
		return err
	}
	select {
	case r := <-cl.done:
		return cc.finish(cl, r, result)
	case <-ctx.Done():
	}
	select { // an answer that arrived together with the deadline still counts
	case r := <-cl.done:
		return cc.finish(cl, r, result)
	default:
	}
	if cl.state.CompareAndSwap(callQueued, callAbandoned) {
		cc.forget(cl)
		return classified(broker.ErrDisconnected, broker.CodeNoConnection,
			"bridge: "+method+": not sent: context ended while queued", ctx.Err())
	}
	cc.sendOneWay(&outFrame{Type: frameCancel, ID: cl.id})
	if isOrderMethod(method) {
		return classified(broker.ErrUnknownOutcome, broker.CodeTimeout,
			"bridge: "+method+": no reply before the context ended; the order may have executed", ctx.Err())
	}
	return classified(broker.ErrDisconnected, broker.CodeNoConnection, "bridge: "+method+": no reply before the context ended", ctx.Err())
}

// post sends a request whose answer nobody waits for, if a request slot is free at once.
// The reader releases the slot when the answer comes.
func (cc *clientConn) post(method string, session uint64, params any, timeout time.Duration) {
	select {
	case cc.slots <- struct{}{}:
	default:
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	_, _ = cc.start(ctx, method, session, params)
}

// start registers and queues a request; the caller holds a slot, which start releases
// when it fails.
func (cc *clientConn) start(ctx context.Context, method string, session uint64, params any) (*call, error) {
	cl := &call{id: cc.nextID.Add(1), method: method, done: make(chan callResult, 1), trace: broker.CallTraceFrom(ctx)}
	f := &outFrame{Type: frameRequest, ID: cl.id, Method: method, Session: session, Params: params}
	if dl, ok := ctx.Deadline(); ok {
		budget := time.Until(dl) + deadlineMargin
		f.Timeout = int64((budget + time.Millisecond - 1) / time.Millisecond)
	}
	b, err := encodeFrame(f)
	if err != nil {
		<-cc.slots
		return nil, broker.NewError(broker.ErrPermanent, broker.CodeInvalidRequest, "%v", err)
	}
	cc.mu.Lock()
	if cc.pending == nil { // the connection is gone
		cc.mu.Unlock()
		<-cc.slots
		return nil, cc.disconnected(method)
	}
	cc.pending[cl.id] = cl
	cc.mu.Unlock()
	cc.out.push(queued{data: b, call: cl})
	return cl, nil
}

// finish turns a call's result into the caller's result or error.
func (cc *clientConn) finish(cl *call, r callResult, result any) error {
	if r.err != nil { // the connection ended first
		if cl.state.CompareAndSwap(callQueued, callAbandoned) || !isOrderMethod(cl.method) {
			return classified(broker.ErrDisconnected, broker.CodeNoConnection,
				"bridge: "+cl.method+": connection lost before the reply", r.err)
		}
		return classified(broker.ErrUnknownOutcome, broker.CodeNoConnection,
			"bridge: "+cl.method+": connection lost with the order in flight; it may have executed", r.err)
	}
	if r.f.Error != nil {
		return r.f.Error.toError(cl.method)
	}
	if result == nil || len(r.f.Result) == 0 {
		return nil
	}
	if w, ok := result.(*wireOrderResult); ok && decodeOrderResultFast(r.f.Result, w) {
		return nil
	}
	if err := json.Unmarshal(r.f.Result, result); err != nil {
		class := broker.ErrPermanent
		if isOrderMethod(cl.method) {
			class = broker.ErrUnknownOutcome // it executed, but we cannot tell how
		}
		return classified(class, broker.CodeInvalidRequest, fmt.Sprintf("bridge: %s: unreadable reply", cl.method), err)
	}
	return nil
}

// forget drops a call that was never written and frees its slot.
func (cc *clientConn) forget(cl *call) {
	cc.mu.Lock()
	if cc.pending != nil {
		delete(cc.pending, cl.id)
	}
	cc.mu.Unlock()
	<-cc.slots
}

// disconnected is the error of a request that could not be sent.
func (cc *clientConn) disconnected(method string) error {
	return classified(broker.ErrDisconnected, broker.CodeNoConnection, "bridge: "+method+": not connected", cc.cause())
}
