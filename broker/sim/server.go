package sim

import (
	"context"
	"crypto/subtle"
	"sync"
	"sync/atomic"
	"time"

	"github.com/snapcopier/copier/broker"
)

// firstTicket is the ticket before the first one the server gives.
const firstTicket = 10_000_000

// Server is an in-memory simulated trade server. It implements broker.Broker (sessions)
// and broker.Controller (provisioning, master trades, order log, faults, options). All
// methods are safe for concurrent use; each account has its own lock, so sessions of
// different accounts never wait for each other except to append to the order log.
// A Server owns no goroutines and needs no shutdown.
type Server struct {
	cfg        Config
	symbolList []*symbol
	symbols    map[string]*symbol // by base name
	usd        map[string]usdRate

	mu       sync.RWMutex
	accounts map[string]*account

	tickets atomic.Int64
	epochs  atomic.Int64
	opts    atomic.Pointer[broker.ServerOptions]
	faults  atomic.Pointer[broker.Faults] // the global profile
	log     orderLog
}

var (
	_ broker.Broker     = (*Server)(nil)
	_ broker.Controller = (*Server)(nil)
)

// New creates a server from cfg (see Config for defaults). It panics on an invalid symbol
// list or fault profile, which are programming errors.
func New(cfg Config) *Server {
	cfg = cfg.withDefaults()
	origin := cfg.Clock()
	s := &Server{
		cfg:      cfg,
		accounts: make(map[string]*account),
		log:      orderLog{limit: cfg.OrderLogLimit},
	}
	s.symbolList, s.symbols = buildSymbols(cfg.Symbols, cfg.Seed, origin, cfg.TickInterval)
	s.usd = buildUSDRates(s.symbolList)
	s.tickets.Store(firstTicket)
	// Epochs start at the start time, so a restarted server does not reuse recent ones.
	if origin.Unix() > 0 {
		s.epochs.Store(origin.UnixNano())
	}
	opts, faults := cfg.Options, cfg.Faults
	s.opts.Store(&opts)
	s.faults.Store(&faults)
	return s
}

// now reads the server clock.
func (s *Server) now() time.Time { return s.cfg.Clock() }

// Connect implements broker.Broker. An unknown login is provisioned from
// Config.DefaultAccount when Config.AutoProvision is set; otherwise it fails, like a wrong
// password, with ErrPermanent / CodeAuthFailed. The server name is not checked.
func (s *Server) Connect(ctx context.Context, creds broker.Credentials) (broker.Session, error) {
	if err := ctx.Err(); err != nil {
		return nil, errNotSent(err)
	}
	a, err := s.lookup(creds.Login)
	if err != nil {
		if !s.cfg.AutoProvision || creds.Login == "" {
			return nil, errAuth()
		}
		a = s.autoProvision(creds.Login)
	}
	if a.password != "" && subtle.ConstantTimeCompare([]byte(a.password), []byte(creds.Password)) != 1 {
		return nil, errAuth()
	}
	if err := sleepCtx(ctx, s.faultsFor(a).Latency); err != nil {
		return nil, errNotSent(err)
	}
	return &session{srv: s, acct: a}, nil
}

// lookup returns the account with login, or ErrPermanent / CodeInvalidRequest.
func (s *Server) lookup(login string) (*account, error) {
	s.mu.RLock()
	a := s.accounts[login]
	s.mu.RUnlock()
	if a == nil {
		return nil, errInvalidRequest("unknown account %q", login)
	}
	return a, nil
}

// autoProvision creates login from the default account spec unless it exists by now.
func (s *Server) autoProvision(login string) *account {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a := s.accounts[login]; a != nil {
		return a
	}
	spec := s.cfg.DefaultAccount
	spec.Login = login
	a := newAccount(spec, s.cfg.Seed, s.cfg.DedupWindow)
	s.accounts[login] = a
	return a
}

// SetMarketOpen opens or closes the market of a symbol (its base name, without account
// suffixes): orders on a closed market fail with ErrMarketClosed / CodeMarketClosed, and
// stops do not trigger. An unknown symbol is ignored.
func (s *Server) SetMarketOpen(symbol string, open bool) {
	if sym := s.symbols[symbol]; sym != nil {
		sym.marketClosed.Store(!open)
	}
}

// SetTradeAllowed enables or disables trading of a symbol (its base name): orders on a
// disabled symbol fail with ErrPermanent / CodeTradeDisabled, and SymbolSpec.TradeAllowed
// reports it. An unknown symbol is ignored.
func (s *Server) SetTradeAllowed(symbol string, allowed bool) {
	if sym := s.symbols[symbol]; sym != nil {
		sym.tradeDisabled.Store(!allowed)
	}
}

// SetPrice moves a symbol's (base name) quote so that its bid is bid now; the random walk
// continues from there. Symbols that share the price process (Underlying) move with it.
// An unknown symbol or a price that is not positive is ignored.
func (s *Server) SetPrice(symbol string, bid float64) {
	sym := s.symbols[symbol]
	if sym == nil || !(bid > 0) {
		return
	}
	sym.feed.set(s.now(), bid+float64(sym.cfg.SpreadPoints)/2/sym.scale)
}

// CheckStops closes, on every account, the positions whose SL or TP the current price has
// reached, and returns how many it closed. It does nothing unless Config.TriggerStops is
// set. Without it, stops are evaluated only when an account is used; a caller that wants
// stops to fire on idle accounts calls CheckStops periodically.
func (s *Server) CheckStops() int {
	if !s.cfg.TriggerStops {
		return 0
	}
	s.mu.RLock()
	accounts := make([]*account, 0, len(s.accounts))
	for _, a := range s.accounts {
		accounts = append(accounts, a)
	}
	s.mu.RUnlock()
	n := 0
	for _, a := range accounts {
		a.mu.Lock()
		n += s.sweepLocked(a, s.now())
		a.mu.Unlock()
	}
	return n
}

// ClearFaults removes an account's own fault profile, so the global one applies to it
// again. An unknown login is ignored.
func (s *Server) ClearFaults(login string) {
	if a, err := s.lookup(login); err == nil {
		a.faults.Store(nil)
	}
}
