package sim

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/snapcopier/copier/broker"
)

// execFunc carries out an order on a locked account.
type execFunc func(a *account, now time.Time) (outcome, error)

// order runs an order request from a session through the server, in this order:
// latency (before the request is sent; ctx may end it), then under the account lock the
// deadline (a request that arrives after it is refused), a disconnect draw (fails before executing and drops the account's feeds), a timeout draw
// (on a hit a coin decides whether the request or its reply was lost: either way the
// caller gets ErrUnknownOutcome, and the order was processed only when the reply was
// lost), then token fencing, de-duplication, a requote draw and the order itself. Every
// request that reached the account is logged once, with what really happened; one whose
// context ended during the latency, or whose session had closed, never reached it.
func (ss *session) order(ctx context.Context, ord broker.Order, e broker.OrderLogEntry, exec execFunc) (broker.OrderResult, error) {
	f, err := ss.begin(ctx)
	if err != nil {
		return broker.OrderResult{}, err
	}
	s, a := ss.srv, ss.acct
	a.mu.Lock()
	defer a.mu.Unlock()
	now := s.now()
	s.sweepLocked(a, now)
	e.ServerTime, e.Login = now, a.login
	e.RequestID, e.Token, e.Node, e.Deadline = ord.RequestID, ord.Token, ord.Node, ord.Deadline
	describeLocked(a, &e)
	if ord.Expired(now) {
		// Arrived after its deadline, by this server's clock: refused, never executed.
		return s.rejectLocked(e, errExpired(ord.Deadline, now))
	}

	if chance(a.rng, f.DisconnectRate) {
		s.dropFeedsLocked(a)
		return s.rejectLocked(e, errDisconnect())
	}
	timedOut := chance(a.rng, f.TimeoutRate)
	if timedOut && a.rng.IntN(2) == 0 {
		return s.rejectLocked(e, errTimeout()) // the request was lost on its way
	}
	res, err := s.processLocked(a, now, f, ord, e, exec)
	if timedOut {
		return broker.OrderResult{}, errTimeout() // the reply was lost on its way back
	}
	return res, err
}

// processLocked is what the trade server does with a request that reached it.
func (s *Server) processLocked(a *account, now time.Time, f broker.Faults, ord broker.Order, e broker.OrderLogEntry, exec execFunc) (broker.OrderResult, error) {
	opts := *s.opts.Load()
	if opts.EnforceTokens && ord.Token < a.tokenHWM {
		return s.rejectLocked(e, errFenced(ord.Token, a.tokenHWM))
	}
	a.tokenHWM = max(a.tokenHWM, ord.Token)
	if opts.DedupRequests && ord.RequestID != uuid.Nil {
		if first, ok := a.dedup.get(ord.RequestID); ok {
			e.Duplicate = true
			if e.Ticket == 0 {
				e.Ticket = first.result.Ticket
			}
			e.Result, e.Error = codeOf(first.err), errString(first.err)
			s.log.append(e)
			r := first.result
			if first.err == nil {
				r.Funds = s.fundsLocked(a, now) // the account's now, not at the first answer
			}
			return r, first.err
		}
	}
	if chance(a.rng, f.RequoteRate) {
		return s.rejectLocked(e, errRequote())
	}
	out, err := exec(a, now)
	if err == nil {
		out.result.Funds = s.fundsLocked(a, now)
	}
	if opts.DedupRequests && ord.RequestID != uuid.Nil && (err == nil || errors.Is(err, broker.ErrPermanent)) {
		a.dedup.put(ord.RequestID, firstAnswer{result: out.result, err: err})
	}
	s.logOutcome(e, out, err)
	s.publishLocked(a, now, f, out.events())
	return out.result, err
}

// masterOrder runs a Controller trade on an account as its owner would: no faults, tokens
// or de-duplication, logged with Master set and a generated request id. It draws the
// account's DisconnectRate once: on a hit the trade still executes, but the account's
// feeds drop before its events are published.
func (s *Server) masterOrder(ctx context.Context, login string, e broker.OrderLogEntry, exec execFunc) (outcome, error) {
	if err := ctx.Err(); err != nil {
		return outcome{}, errNotSent(err)
	}
	a, err := s.lookup(login)
	if err != nil {
		return outcome{}, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	now := s.now()
	s.sweepLocked(a, now)
	f := s.faultsFor(a)
	e.ServerTime, e.Login, e.Master, e.RequestID = now, a.login, true, a.newRequestID()
	describeLocked(a, &e)
	out, err := exec(a, now)
	s.logOutcome(e, out, err)
	if chance(a.rng, f.DisconnectRate) {
		s.dropFeedsLocked(a)
	}
	s.publishLocked(a, now, f, out.events())
	return out, err
}

// describeLocked completes a close or modify log entry from the position it names.
func describeLocked(a *account, e *broker.OrderLogEntry) {
	if e.Op == broker.OpOpen || e.Ticket == 0 {
		return
	}
	if p := a.findLocked(e.Ticket); p != nil {
		e.Symbol, e.Side, e.Magic = p.Symbol, p.Side, p.Magic
		if e.Op == broker.OpClose && e.Volume == 0 {
			e.Volume = p.Volume
		}
	}
}

// rejectLocked logs a request that did not reach the order's execution and returns err.
func (s *Server) rejectLocked(e broker.OrderLogEntry, err error) (broker.OrderResult, error) {
	e.Result, e.Error = codeOf(err), errString(err)
	s.log.append(e)
	return broker.OrderResult{}, err
}

// logOutcome logs an order that was executed or rejected by the trade logic.
func (s *Server) logOutcome(e broker.OrderLogEntry, out outcome, err error) {
	e.Executed = err == nil
	e.Result, e.Error = codeOf(err), errString(err)
	if err == nil {
		e.Ticket = out.result.Ticket
		if e.Op != broker.OpModify {
			e.Volume = out.result.Volume
		}
	}
	s.log.append(e)
}
