package sim

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/snapcopier/copier/broker"
)

// session is one connected account. It is safe for concurrent use.
type session struct {
	srv  *Server
	acct *account

	mu     sync.Mutex
	closed atomic.Bool // set under mu; read without it on the fast path
	subs   []*subscription
}

var _ broker.Session = (*session)(nil)

// begin starts a call: it fails on a closed session or an ended context, then waits the
// injected latency. It returns the fault profile for the rest of the call.
func (ss *session) begin(ctx context.Context) (broker.Faults, error) {
	if ss.closed.Load() {
		return broker.Faults{}, errSessionClosed()
	}
	if err := ctx.Err(); err != nil {
		return broker.Faults{}, errNotSent(err)
	}
	f := ss.srv.faultsFor(ss.acct)
	if err := sleepCtx(ctx, f.Latency); err != nil {
		return broker.Faults{}, errNotSent(err)
	}
	if ss.closed.Load() {
		return broker.Faults{}, errSessionClosed()
	}
	return f, nil
}

// read runs fn under the account lock after the call's faults: a disconnect draw fails the
// call and drops the account's feeds.
func (ss *session) read(ctx context.Context, fn func(now time.Time) error) error {
	f, err := ss.begin(ctx)
	if err != nil {
		return err
	}
	s, a := ss.srv, ss.acct
	a.mu.Lock()
	defer a.mu.Unlock()
	now := s.now()
	s.sweepLocked(a, now)
	if chance(a.rng, f.DisconnectRate) {
		s.dropFeedsLocked(a)
		return errDisconnect()
	}
	return fn(now)
}

// Account implements broker.Session.
func (ss *session) Account(ctx context.Context) (broker.AccountInfo, error) {
	var info broker.AccountInfo
	err := ss.read(ctx, func(now time.Time) error {
		a := ss.acct
		info = broker.AccountInfo{
			Login:    a.login,
			Currency: a.currency,
			Balance:  a.balance,
			Equity:   ss.srv.equityLocked(a, now),
			Leverage: a.leverage,
			Mode:     a.mode,
		}
		return nil
	})
	return info, err
}

// Symbols implements broker.Session: every symbol with the account's suffix and the
// current quote.
func (ss *session) Symbols(ctx context.Context) ([]broker.SymbolSpec, error) {
	var specs []broker.SymbolSpec
	err := ss.read(ctx, func(now time.Time) error {
		specs = make([]broker.SymbolSpec, len(ss.srv.symbolList))
		for i, sym := range ss.srv.symbolList {
			specs[i] = sym.spec(ss.acct.suffix, now)
		}
		return nil
	})
	return specs, err
}

// Positions implements broker.Session, in ticket order.
func (ss *session) Positions(ctx context.Context) ([]broker.Position, error) {
	var out []broker.Position
	err := ss.read(ctx, func(time.Time) error {
		out = ss.acct.snapshotLocked()
		return nil
	})
	return out, err
}

// Open implements broker.Session. Only market orders are supported.
func (ss *session) Open(ctx context.Context, req broker.OpenRequest) (broker.OrderResult, error) {
	e := broker.OrderLogEntry{
		Op:      broker.OpOpen,
		Symbol:  req.Symbol,
		Side:    req.Side,
		Volume:  req.Volume,
		Magic:   req.Magic,
		Comment: truncateComment(req.Comment),
	}
	return ss.order(ctx, req.Order, e, func(a *account, now time.Time) (outcome, error) {
		if req.Type != broker.Market {
			return outcome{}, errInvalidRequest("pending orders are not supported")
		}
		return ss.srv.openLocked(a, now, openOrder{
			symbol: req.Symbol, side: req.Side, volume: req.Volume,
			sl: req.SL, tp: req.TP, magic: req.Magic, comment: req.Comment, worst: req.WorstPrice,
		})
	})
}

// ClosePosition implements broker.Session.
func (ss *session) ClosePosition(ctx context.Context, req broker.CloseRequest) (broker.OrderResult, error) {
	e := broker.OrderLogEntry{Op: broker.OpClose, Ticket: req.Ticket, Volume: req.Volume}
	return ss.order(ctx, req.Order, e, func(a *account, now time.Time) (outcome, error) {
		return ss.srv.closeLocked(a, now, req.Ticket, req.Volume)
	})
}

// Modify implements broker.Session.
func (ss *session) Modify(ctx context.Context, req broker.ModifyRequest) (broker.OrderResult, error) {
	e := broker.OrderLogEntry{Op: broker.OpModify, Ticket: req.Ticket}
	return ss.order(ctx, req.Order, e, func(a *account, now time.Time) (outcome, error) {
		return ss.srv.modifyLocked(a, now, req.Ticket, req.SL, req.TP)
	})
}

// Fence implements broker.Session: it raises the account's highest seen token to o.Token
// (refusing a lower one when tokens are enforced, and an expired o). Nothing is logged:
// it is not an order.
func (ss *session) Fence(ctx context.Context, o broker.Order) error {
	if _, err := ss.begin(ctx); err != nil {
		return err
	}
	s, a := ss.srv, ss.acct
	a.mu.Lock()
	defer a.mu.Unlock()
	now := s.now()
	if o.Expired(now) {
		return errExpired(o.Deadline, now)
	}
	if s.opts.Load().EnforceTokens && o.Token < a.tokenHWM {
		return errFenced(o.Token, a.tokenHWM)
	}
	a.tokenHWM = max(a.tokenHWM, o.Token)
	return nil
}

// Subscribe implements broker.Session: a new stream of the account's events with a new
// epoch, Seq from 1. It closes when ctx ends, the session closes, the connection drops
// (DisconnectRate) or its buffer overflows.
func (ss *session) Subscribe(ctx context.Context) (<-chan broker.Event, error) {
	var ch <-chan broker.Event
	err := ss.read(ctx, func(time.Time) error {
		sub, err := ss.srv.subscribeLocked(ctx, ss.acct, ss)
		if err != nil {
			return err
		}
		ch = sub.ch
		return nil
	})
	return ch, err
}

// Close implements broker.Session. It closes the session's subscriptions; later calls
// fail with ErrDisconnected. Closing twice is a no-op.
func (ss *session) Close() error {
	ss.mu.Lock()
	if ss.closed.Load() {
		ss.mu.Unlock()
		return nil
	}
	ss.closed.Store(true)
	subs := ss.subs
	ss.subs = nil
	ss.mu.Unlock()

	a := ss.acct
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, sub := range subs {
		ss.srv.closeSubLocked(sub)
	}
	return nil
}

// track records a new subscription; it fails once the session has closed.
func (ss *session) track(sub *subscription) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.closed.Load() {
		return false
	}
	ss.subs = append(ss.subs, sub)
	return true
}

// untrack forgets a closed subscription.
func (ss *session) untrack(sub *subscription) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for i, s := range ss.subs {
		if s == sub {
			ss.subs = append(ss.subs[:i], ss.subs[i+1:]...)
			return
		}
	}
}
