// Package activity trades on master accounts through a broker.Controller at a steady rate,
// from a seeded random source: opens (always with SL and TP around the current price, so
// risk-percent links can size them), SL/TP changes, partial closes and closes. It is the
// load of `copierd demo` and `copierd stress`.
package activity

import (
	"context"
	"math"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/broker/sim"
)

// DefaultSymbols are the symbols the masters trade unless Config.Symbols says otherwise.
func DefaultSymbols() []string { return []string{"EURUSD", "GBPUSD", "USDJPY", "XAUUSD", "US30"} }

// Config sets up a Generator.
type Config struct {
	Control broker.Controller
	// Quotes is a fault-free session used only to read current prices.
	Quotes  broker.Session
	Masters []string // logins of the master accounts
	Seed    uint64
	Symbols []string // default DefaultSymbols()
	MaxOpen int      // open positions per master before it prefers other trades (default 4)
	Comment string   // comment of the masters' positions
	Logger  zerolog.Logger
}

// Counts are the trades made so far.
type Counts struct {
	Opens, Modifies, Partials, Closes, Failures int64
}

// Events is the number of trades that went through.
func (c Counts) Events() int64 { return c.Opens + c.Modifies + c.Partials + c.Closes }

// Generator makes the trades. Run and Step are for one goroutine; Counts and WaitTrade
// may be called from others.
type Generator struct {
	cfg    Config
	digits map[string]int
	rnd    *rand.Rand
	// traded gets a token (without blocking) after every trade, so a caller can time
	// something (a fault) to land in the fan-out of copies that follows one.
	traded chan struct{}

	opens, modifies, partials, closes, failures atomic.Int64
}

// New returns a generator.
func New(cfg Config) *Generator {
	if len(cfg.Symbols) == 0 {
		cfg.Symbols = DefaultSymbols()
	}
	if cfg.MaxOpen <= 0 {
		cfg.MaxOpen = 4
	}
	g := &Generator{cfg: cfg, digits: map[string]int{}, traded: make(chan struct{}, 1),
		rnd: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x5bd1e995))}
	for _, s := range sim.DefaultSymbols() {
		g.digits[s.Name] = s.Digits
	}
	return g
}

// Counts returns the trades made so far.
func (g *Generator) Counts() Counts {
	return Counts{Opens: g.opens.Load(), Modifies: g.modifies.Load(), Partials: g.partials.Load(), Closes: g.closes.Load(), Failures: g.failures.Load()}
}

// Run trades at rate trades per second until ctx ends.
func (g *Generator) Run(ctx context.Context, rate float64) {
	t := time.NewTicker(time.Duration(float64(time.Second) / rate))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			g.Step(ctx)
		}
	}
}

// Step makes one trade on a random master.
func (g *Generator) Step(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	login := g.cfg.Masters[g.rnd.IntN(len(g.cfg.Masters))]
	ps, err := g.cfg.Control.AccountPositions(ctx, login)
	if err != nil {
		g.failed(ctx, login, "positions", err)
		return
	}
	if len(ps) == 0 || (len(ps) < g.cfg.MaxOpen && g.rnd.Float64() < 0.45) {
		g.open(ctx, login)
		return
	}
	p := ps[g.rnd.IntN(len(ps))]
	switch r := g.rnd.Float64(); {
	case r < 0.35:
		bid, ask, err := g.quote(ctx, p.Symbol)
		if err != nil {
			g.failed(ctx, login, "quote", err)
			return
		}
		ref := bid
		if p.Side == broker.Sell {
			ref = ask
		}
		sl, tp := g.stops(p.Symbol, p.Side, ref)
		if _, err := g.cfg.Control.MasterModify(ctx, login, p.Ticket, sl, tp); err != nil {
			g.failed(ctx, login, "modify", err)
			return
		}
		g.done(&g.modifies)
	case r < 0.6 && p.Volume >= 0.2-1e-9:
		part := math.Floor(p.Volume/2*100+1e-9) / 100 // half, down to the 0.01 step
		if err := g.cfg.Control.MasterClose(ctx, login, p.Ticket, part); err != nil {
			g.failed(ctx, login, "partial close", err)
			return
		}
		g.done(&g.partials)
	default:
		if err := g.cfg.Control.MasterClose(ctx, login, p.Ticket, 0); err != nil {
			g.failed(ctx, login, "close", err)
			return
		}
		g.done(&g.closes)
	}
}

// WaitTrade waits for the next trade (at most within) and reports whether one came.
func (g *Generator) WaitTrade(ctx context.Context, within time.Duration) bool {
	select {
	case <-g.traded: // a stale token from an earlier trade
	default:
	}
	t := time.NewTimer(within)
	defer t.Stop()
	select {
	case <-g.traded:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	return false
}

// open opens 0.1 to 0.5 lots of a random symbol with SL and TP around the current price.
func (g *Generator) open(ctx context.Context, login string) {
	sym := g.cfg.Symbols[g.rnd.IntN(len(g.cfg.Symbols))]
	side := broker.Buy
	if g.rnd.IntN(2) == 0 {
		side = broker.Sell
	}
	bid, ask, err := g.quote(ctx, sym)
	if err != nil {
		g.failed(ctx, login, "quote", err)
		return
	}
	px := ask
	if side == broker.Sell {
		px = bid
	}
	req := broker.MasterOpenRequest{Symbol: sym, Side: side, Volume: float64(1+g.rnd.IntN(5)) / 10, Comment: g.cfg.Comment}
	req.SL, req.TP = g.stops(sym, side, px)
	if _, err := g.cfg.Control.MasterOpen(ctx, login, req); err != nil {
		g.failed(ctx, login, "open", err)
		return
	}
	g.done(&g.opens)
}

// quote reads the current bid and ask of a symbol.
func (g *Generator) quote(ctx context.Context, sym string) (bid, ask float64, err error) {
	specs, err := g.cfg.Quotes.Symbols(ctx)
	if err != nil {
		return 0, 0, err
	}
	for _, s := range specs {
		if s.Name == sym && s.Bid > 0 && s.Ask > 0 {
			return s.Bid, s.Ask, nil
		}
	}
	return 0, 0, broker.NewError(broker.ErrPermanent, broker.CodeInvalidRequest, "no quote for %s", sym)
}

// stops returns an SL 1 to 2.5 % and a TP 1.5 to 3 % away from price, on the right sides.
func (g *Generator) stops(sym string, side broker.Side, price float64) (sl, tp float64) {
	dsl := 0.01 + 0.015*g.rnd.Float64()
	dtp := 0.015 + 0.015*g.rnd.Float64()
	f := math.Pow10(g.digits[sym])
	round := func(v float64) float64 { return math.Round(v*f) / f }
	if side == broker.Buy {
		return round(price * (1 - dsl)), round(price * (1 + dtp))
	}
	return round(price * (1 + dsl)), round(price * (1 - dtp))
}

func (g *Generator) done(counter *atomic.Int64) {
	counter.Add(1)
	select {
	case g.traded <- struct{}{}:
	default:
	}
}

// failed counts and logs a trade that did not go through (unless the generator is stopping).
func (g *Generator) failed(ctx context.Context, login, what string, err error) {
	if ctx.Err() != nil {
		return
	}
	g.failures.Add(1)
	g.cfg.Logger.Debug().Str("master", login).Err(err).Msg(what + " failed")
}
