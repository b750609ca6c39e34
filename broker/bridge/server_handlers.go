package bridge

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/snapcopier/copier/broker"
)

// handle executes one request and returns its wire result.
func (c *serverConn) handle(ctx context.Context, f *inFrame) (any, error) {
	switch f.Method {
	case methodConnect:
		return nil, c.connect(ctx, f)
	case methodSessionClose:
		return nil, c.closeSession(f.Session)
	case methodSubscribe:
		return nil, c.subscribe(ctx, f)
	}
	if strings.HasPrefix(f.Method, "control.") {
		return c.control(ctx, f)
	}
	sess, err := c.session(f.Session)
	if err != nil {
		return nil, err
	}
	switch f.Method {
	case methodAccount:
		a, err := sess.Account(ctx)
		return toWireAccount(a), err
	case methodSymbols:
		s, err := sess.Symbols(ctx)
		return toWireSymbols(s), err
	case methodPositions:
		p, err := sess.Positions(ctx)
		return toWirePositions(p), err
	case methodFence:
		var p wireOrder
		if err := decodeParams(f, &p); err != nil {
			return nil, err
		}
		if err := c.refuseExpired(p.toBroker()); err != nil {
			return nil, err
		}
		return nil, sess.Fence(ctx, p.toBroker())
	case methodOpen:
		var p wireOpen
		if err := decodeParams(f, &p); err != nil {
			return nil, err
		}
		if err := c.refuseExpired(p.wireOrder.toBroker()); err != nil {
			return nil, err
		}
		r, err := sess.Open(ctx, p.toBroker())
		return toWireOrderResult(r), err
	case methodClosePosition:
		var p wireClose
		if err := decodeParams(f, &p); err != nil {
			return nil, err
		}
		if err := c.refuseExpired(p.wireOrder.toBroker()); err != nil {
			return nil, err
		}
		r, err := sess.ClosePosition(ctx, p.toBroker())
		return toWireOrderResult(r), err
	case methodModify:
		var p wireModify
		if err := decodeParams(f, &p); err != nil {
			return nil, err
		}
		if err := c.refuseExpired(p.wireOrder.toBroker()); err != nil {
			return nil, err
		}
		r, err := sess.Modify(ctx, p.toBroker())
		return toWireOrderResult(r), err
	}
	return nil, broker.NewError(broker.ErrPermanent, broker.CodeInvalidRequest, "bridge: unknown method %q", f.Method)
}

// refuseExpired refuses a request that arrived after its deadline, by this server's
// clock, before it reaches the broker behind: it never executes (ErrExpired).
func (c *serverConn) refuseExpired(o broker.Order) error {
	now := c.srv.now()
	if o.Expired(now) {
		return broker.NewError(broker.ErrExpired, broker.CodeExpired, "bridge: request arrived %v after its deadline", now.Sub(o.Deadline))
	}
	return nil
}

// decodeParams decodes a request's params into v; a malformed request is permanent.
func decodeParams(f *inFrame, v any) error {
	if len(f.Params) == 0 {
		return broker.NewError(broker.ErrPermanent, broker.CodeInvalidRequest, "bridge: %s without params", f.Method)
	}
	if decodeOrderParamsFast(f.Params, v) {
		return nil
	}
	if err := json.Unmarshal(f.Params, v); err != nil {
		return broker.NewError(broker.ErrPermanent, broker.CodeInvalidRequest, "bridge: %s: bad params: %v", f.Method, err)
	}
	return nil
}

// session returns the open session id. An id this connection does not hold (never opened,
// closed, or still connecting) is reported as disconnected: the request did not reach a
// session and is safe to resend once the session is open.
func (c *serverConn) session(id uint64) (broker.Session, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ss := c.sessions[id]
	if ss == nil || ss.sess == nil {
		return nil, broker.NewError(broker.ErrDisconnected, broker.CodeNoConnection,
			"bridge: session %d is not open on this connection", id)
	}
	return ss.sess, nil
}

// connect opens a session under the id the client chose.
func (c *serverConn) connect(ctx context.Context, f *inFrame) error {
	var p wireCredentials
	if err := decodeParams(f, &p); err != nil {
		return err
	}
	if f.Session == 0 {
		return broker.NewError(broker.ErrPermanent, broker.CodeInvalidRequest, "bridge: broker.connect without a session id")
	}
	ss := &serverSession{subs: make(map[uint64]*serverSub)}
	c.mu.Lock()
	if c.sessions[f.Session] != nil {
		c.mu.Unlock()
		return broker.NewError(broker.ErrPermanent, broker.CodeInvalidRequest, "bridge: session id %d is in use", f.Session)
	}
	c.sessions[f.Session] = ss // reserved while connecting
	c.mu.Unlock()

	sess, err := c.srv.b.Connect(ctx, p.credentials())
	if err == nil && ctx.Err() != nil {
		// The client gave up meanwhile and will never use this session.
		_ = sess.Close()
		err = ctx.Err()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err == nil && ss.closed {
		// The client closed the id while it was connecting.
		_ = sess.Close()
		return broker.NewError(broker.ErrPermanent, broker.CodeInvalidRequest, "bridge: session %d closed while connecting", f.Session)
	}
	if err != nil {
		if c.sessions[f.Session] == ss {
			delete(c.sessions, f.Session)
		}
		return err
	}
	ss.sess = sess
	c.log.Debug().Uint64("session", f.Session).Str("login", p.Login).Msg("session opened")
	return nil
}

// closeSession closes a session and its subscriptions. Closing an unknown id is not an
// error, so a client can always close what it may have opened.
func (c *serverConn) closeSession(id uint64) error {
	c.mu.Lock()
	ss := c.sessions[id]
	if ss == nil {
		c.mu.Unlock()
		return nil
	}
	delete(c.sessions, id)
	if ss.sess == nil { // still connecting: connect closes it when it completes
		ss.closed = true
		c.mu.Unlock()
		return nil
	}
	for _, sub := range ss.subs {
		sub.cancel()
	}
	c.mu.Unlock()
	return ss.sess.Close()
}
