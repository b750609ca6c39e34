package bridge

import (
	"context"
	"sync/atomic"

	"github.com/snapcopier/copier/broker"
)

// serverSub is one subscription a client holds on this connection. A forwarder goroutine
// moves its events from the wrapped session's channel to the connection's event queue.
type serverSub struct {
	id      uint64
	session uint64
	ctx     context.Context // the wrapped subscription's context
	cancel  context.CancelFunc
	// unsubscribed is set when the client ended the subscription, so no sub_end is sent.
	unsubscribed atomic.Bool
}

// subscribe subscribes the session to its feed under the subscription id the client
// chose. The feed lives until the client unsubscribes, the session closes, the wrapped
// feed ends or the connection ends; the request's own deadline only bounds the call.
func (c *serverConn) subscribe(ctx context.Context, f *inFrame) error {
	var p wireSubscribe
	if err := decodeParams(f, &p); err != nil {
		return err
	}
	if p.Sub == 0 {
		return broker.NewError(broker.ErrPermanent, broker.CodeInvalidRequest, "bridge: session.subscribe without a sub id")
	}
	subCtx, cancel := context.WithCancel(c.ctx)
	sub := &serverSub{id: p.Sub, session: f.Session, ctx: subCtx, cancel: cancel}
	c.mu.Lock()
	ss := c.sessions[f.Session]
	var err error
	switch {
	case ss == nil || ss.sess == nil:
		err = broker.NewError(broker.ErrDisconnected, broker.CodeNoConnection,
			"bridge: session %d is not open on this connection", f.Session)
	case c.subs[p.Sub] != nil:
		err = broker.NewError(broker.ErrPermanent, broker.CodeInvalidRequest, "bridge: sub id %d is in use", p.Sub)
	default:
		c.subs[p.Sub] = sub
		ss.subs[p.Sub] = sub
	}
	c.mu.Unlock()
	if err != nil {
		cancel()
		return err
	}

	stop := context.AfterFunc(ctx, cancel) // the call's deadline bounds Subscribe itself
	ch, err := ss.sess.Subscribe(subCtx)
	callEnded := !stop()
	if err != nil {
		c.dropSub(sub)
		cancel()
		return err
	}
	c.wg.Add(1)
	go c.forward(sub, ch)
	if callEnded {
		return ctx.Err() // the forwarder drains and drops the cancelled feed
	}
	return nil
}

// forward moves events to the connection's event queue until the wrapped channel closes,
// then tells the client the subscription ended unless the client ended it. While the
// writer is behind, it waits, and events back up into the wrapped channel.
func (c *serverConn) forward(sub *serverSub, ch <-chan broker.Event) {
	defer c.wg.Done()
	defer sub.cancel()
	for ev := range ch {
		if sub.ctx.Err() != nil {
			continue // cancelled: drain until the wrapped feed closes the channel
		}
		b, err := encodeFrame(&outFrame{Type: frameEvent, Sub: sub.id, Event: toWireEvent(ev)})
		if err != nil {
			c.log.Error().Err(err).Uint64("sub", sub.id).Msg("cannot encode event; ending the subscription")
			sub.cancel()
			continue
		}
		select {
		case c.events <- b:
		case <-sub.ctx.Done():
		}
	}
	c.dropSub(sub)
	if sub.unsubscribed.Load() || c.ctx.Err() != nil {
		return
	}
	b, err := encodeFrame(&outFrame{Type: frameSubEnd, Sub: sub.id, Reason: "feed ended"})
	if err != nil {
		return
	}
	select {
	case c.events <- b:
	case <-c.ctx.Done():
	}
}

// unsubscribe ends a subscription at the client's request.
func (c *serverConn) unsubscribe(id uint64) {
	c.mu.Lock()
	sub := c.subs[id]
	c.mu.Unlock()
	if sub != nil {
		sub.unsubscribed.Store(true)
		sub.cancel()
	}
}

// dropSub forgets a subscription.
func (c *serverConn) dropSub(sub *serverSub) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.subs[sub.id] == sub {
		delete(c.subs, sub.id)
	}
	if ss := c.sessions[sub.session]; ss != nil && ss.subs[sub.id] == sub {
		delete(ss.subs, sub.id)
	}
}
