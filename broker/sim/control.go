package sim

import (
	"context"
	"math"
	"time"

	"github.com/snapcopier/copier/broker"
)

// Provision implements broker.Controller. A new account takes the spec, with currency
// USD, leverage 100 and hedging mode when those are zero. An existing account gets the
// spec's balance and, when it is not zero, mode; its other fields keep their values. The
// mode of an account with open positions cannot change.
func (s *Server) Provision(ctx context.Context, spec broker.AccountSpec) error {
	if err := ctx.Err(); err != nil {
		return errNotSent(err)
	}
	switch {
	case spec.Login == "":
		return errInvalidRequest("account without a login")
	case spec.Mode != 0 && spec.Mode != broker.Hedging && spec.Mode != broker.Netting:
		return errInvalidRequest("invalid account mode %d", spec.Mode)
	case math.IsNaN(spec.Balance) || math.IsInf(spec.Balance, 0) || spec.Balance < 0:
		return errInvalidRequest("invalid balance %v", spec.Balance)
	}
	s.mu.Lock()
	a := s.accounts[spec.Login]
	if a == nil {
		s.accounts[spec.Login] = newAccount(accountDefaults(spec), s.cfg.Seed, s.cfg.DedupWindow)
		s.mu.Unlock()
		return nil
	}
	s.mu.Unlock()

	a.mu.Lock()
	defer a.mu.Unlock()
	if spec.Mode != 0 && spec.Mode != a.mode {
		if len(a.positions) > 0 {
			return errInvalidRequest("account %q has open positions: its mode cannot change", spec.Login)
		}
		a.mode = spec.Mode
	}
	a.balance = spec.Balance
	return nil
}

// MasterOpen implements broker.Controller. On a netting account the order merges into an
// open position of the symbol like a session order does; the returned position is the
// one the order left (its last state when the order closed it).
func (s *Server) MasterOpen(ctx context.Context, login string, req broker.MasterOpenRequest) (broker.Position, error) {
	e := broker.OrderLogEntry{
		Op:      broker.OpOpen,
		Symbol:  req.Symbol,
		Side:    req.Side,
		Volume:  req.Volume,
		Magic:   req.Magic,
		Comment: truncateComment(req.Comment),
	}
	out, err := s.masterOrder(ctx, login, e, func(a *account, now time.Time) (outcome, error) {
		return s.openLocked(a, now, openOrder{
			symbol: req.Symbol, side: req.Side, volume: req.Volume,
			sl: req.SL, tp: req.TP, magic: req.Magic, comment: req.Comment,
		})
	})
	return out.pos, err
}

// MasterModify implements broker.Controller.
func (s *Server) MasterModify(ctx context.Context, login string, ticket int64, sl, tp float64) (broker.Position, error) {
	e := broker.OrderLogEntry{Op: broker.OpModify, Ticket: ticket}
	out, err := s.masterOrder(ctx, login, e, func(a *account, now time.Time) (outcome, error) {
		return s.modifyLocked(a, now, ticket, sl, tp)
	})
	return out.pos, err
}

// MasterClose implements broker.Controller.
func (s *Server) MasterClose(ctx context.Context, login string, ticket int64, volume float64) error {
	e := broker.OrderLogEntry{Op: broker.OpClose, Ticket: ticket, Volume: volume}
	_, err := s.masterOrder(ctx, login, e, func(a *account, now time.Time) (outcome, error) {
		return s.closeLocked(a, now, ticket, volume)
	})
	return err
}

// AccountPositions implements broker.Controller, in ticket order.
func (s *Server) AccountPositions(ctx context.Context, login string) ([]broker.Position, error) {
	if err := ctx.Err(); err != nil {
		return nil, errNotSent(err)
	}
	a, err := s.lookup(login)
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	s.sweepLocked(a, s.now())
	return a.snapshotLocked(), nil
}

// OrderLog implements broker.Controller. With Config.OrderLogLimit, the oldest entries
// may have been discarded.
func (s *Server) OrderLog(ctx context.Context, afterSeq int64, limit int) ([]broker.OrderLogEntry, error) {
	if err := ctx.Err(); err != nil {
		return nil, errNotSent(err)
	}
	return s.log.read(afterSeq, limit), nil
}

// SetFaults implements broker.Controller. An account's own profile, even a zero one,
// overrides the global profile until ClearFaults. Rates must be within [0, 1].
func (s *Server) SetFaults(ctx context.Context, login string, f broker.Faults) error {
	if err := ctx.Err(); err != nil {
		return errNotSent(err)
	}
	if err := validateFaults(f); err != nil {
		return errInvalidRequest("%v", err)
	}
	if login == "" {
		s.faults.Store(&f)
		return nil
	}
	a, err := s.lookup(login)
	if err != nil {
		return err
	}
	a.faults.Store(&f)
	return nil
}

// SetOptions implements broker.Controller. The new options apply to requests that take
// the account lock after the call.
func (s *Server) SetOptions(ctx context.Context, o broker.ServerOptions) error {
	if err := ctx.Err(); err != nil {
		return errNotSent(err)
	}
	s.opts.Store(&o)
	return nil
}

// Options returns the current server-wide options.
func (s *Server) Options() broker.ServerOptions { return *s.opts.Load() }
