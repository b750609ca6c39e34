package bridge

import (
	"context"
	"errors"
	"sync"

	"github.com/snapcopier/copier/broker"
)

// session is a broker.Session carried by a Client. It is opened on the client's live
// connection under an id that is new for every (re)open, and reopened on the next call
// after the connection was replaced. It keeps the account's credentials for that.
type session struct {
	c     *Client
	creds broker.Credentials
	gate  chan struct{} // capacity 1: one (re)open at a time

	mu     sync.Mutex
	conn   *clientConn // where the session is open; nil before the first open
	id     uint64      // its id on conn
	closed bool
	subs   map[*clientSub]struct{}
}

var _ broker.Session = (*session)(nil)

func newSession(c *Client, creds broker.Credentials) *session {
	return &session{c: c, creds: creds, gate: make(chan struct{}, 1), subs: make(map[*clientSub]struct{})}
}

func (s *session) errClosed() error {
	return broker.NewError(broker.ErrDisconnected, broker.CodeNoConnection, "bridge: session for %s is closed", s.creds.Login)
}

// opened reports the session's id on cc when it is open there.
func (s *session) opened(cc *clientConn) (uint64, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, false, s.errClosed()
	}
	return s.id, s.conn == cc, nil
}

// credentials returns the connect params, or an error once the session is closed.
func (s *session) credentials() (wireCredentials, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return wireCredentials{}, s.errClosed()
	}
	return toWireCredentials(s.creds), nil
}

// attach returns the live connection and the session's id on it, opening the session
// there first when needed.
func (s *session) attach(ctx context.Context) (*clientConn, uint64, error) {
	cc, err := s.c.current()
	if err != nil {
		return nil, 0, err
	}
	if id, ok, err := s.opened(cc); err != nil || ok {
		return cc, id, err
	}
	select {
	case s.gate <- struct{}{}:
		defer func() { <-s.gate }()
	case <-ctx.Done():
		return nil, 0, classified(broker.ErrDisconnected, broker.CodeNoConnection,
			"bridge: session for "+s.creds.Login+" is reconnecting", ctx.Err())
	}
	if cc, err = s.c.current(); err != nil {
		return nil, 0, err
	}
	if id, ok, err := s.opened(cc); err != nil || ok {
		return cc, id, err // opened by another caller meanwhile
	}
	params, err := s.credentials()
	if err != nil {
		return nil, 0, err
	}
	id := s.c.ids.Add(1)
	if err := cc.do(ctx, methodConnect, id, params, nil); err != nil {
		// The server may have opened it after all (the reply was lost or late): close it.
		cc.post(methodSessionClose, id, nil, s.c.opts.RequestTimeout)
		return nil, 0, err
	}
	s.mu.Lock()
	closed := s.closed
	if !closed {
		s.conn, s.id = cc, id
	}
	s.mu.Unlock()
	if closed {
		cc.post(methodSessionClose, id, nil, s.c.opts.RequestTimeout)
		return nil, 0, s.errClosed()
	}
	return cc, id, nil
}

// call runs one session request.
func (s *session) call(ctx context.Context, method string, params, result any) error {
	ctx, cancel := s.c.bound(ctx)
	defer cancel()
	cc, id, err := s.attach(ctx)
	if err != nil {
		return err
	}
	return cc.do(ctx, method, id, params, result)
}

// Account implements broker.Session.
func (s *session) Account(ctx context.Context) (broker.AccountInfo, error) {
	var w wireAccount
	if err := s.call(ctx, methodAccount, nil, &w); err != nil {
		return broker.AccountInfo{}, err
	}
	return w.toBroker(), nil
}

// Symbols implements broker.Session.
func (s *session) Symbols(ctx context.Context) ([]broker.SymbolSpec, error) {
	var w []wireSymbol
	if err := s.call(ctx, methodSymbols, nil, &w); err != nil {
		return nil, err
	}
	return fromWireSymbols(w), nil
}

// Positions implements broker.Session.
func (s *session) Positions(ctx context.Context) ([]broker.Position, error) {
	var w []wirePosition
	if err := s.call(ctx, methodPositions, nil, &w); err != nil {
		return nil, err
	}
	return fromWirePositions(w), nil
}

// Open implements broker.Session.
func (s *session) Open(ctx context.Context, req broker.OpenRequest) (broker.OrderResult, error) {
	var w wireOrderResult
	if err := s.call(ctx, methodOpen, toWireOpen(req), &w); err != nil {
		return broker.OrderResult{}, err
	}
	return w.toBroker(), nil
}

// ClosePosition implements broker.Session.
func (s *session) ClosePosition(ctx context.Context, req broker.CloseRequest) (broker.OrderResult, error) {
	var w wireOrderResult
	if err := s.call(ctx, methodClosePosition, toWireClose(req), &w); err != nil {
		return broker.OrderResult{}, err
	}
	return w.toBroker(), nil
}

// Modify implements broker.Session.
func (s *session) Modify(ctx context.Context, req broker.ModifyRequest) (broker.OrderResult, error) {
	var w wireOrderResult
	if err := s.call(ctx, methodModify, toWireModify(req), &w); err != nil {
		return broker.OrderResult{}, err
	}
	return w.toBroker(), nil
}

// Fence implements broker.Session.
func (s *session) Fence(ctx context.Context, o broker.Order) error {
	return s.call(ctx, methodFence, toWireOrder(o), nil)
}

// Close implements broker.Session: it ends the session's subscriptions and closes it on
// the server. A session whose connection is gone is already closed there.
func (s *session) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	cc, id := s.conn, s.id
	subs := s.subs
	s.subs = nil
	s.creds.Password = ""
	s.mu.Unlock()
	for sub := range subs {
		sub.end(false) // the server ends them with the session
	}
	if cc == nil {
		return nil
	}
	if live, _ := s.c.current(); live != cc {
		return nil
	}
	ctx, cancel := context.WithTimeout(s.c.ctx, s.c.opts.RequestTimeout)
	defer cancel()
	err := cc.do(ctx, methodSessionClose, id, nil, nil)
	if errors.Is(err, broker.ErrDisconnected) {
		return nil
	}
	return err
}
