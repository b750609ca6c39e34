package stress

import (
	"context"
	"math"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/broker/sim"
	"github.com/snapcopier/copier/reconcile"
)

// loadSymbols are the symbols the masters trade.
var loadSymbols = []string{"EURUSD", "GBPUSD", "USDJPY", "XAUUSD", "US30"}

// loadGen trades on the master accounts at a steady rate from a seeded random source:
// opens (always with SL and TP, so risk-percent links can size them), SL/TP changes,
// partial closes and closes.
type loadGen struct {
	ctl     broker.Controller
	quotes  broker.Session // a fault-free session that reads prices
	masters []string
	digits  map[string]int
	rnd     *rand.Rand // run goroutine only
	maxOpen int
	// traded gets a token (without blocking) after every master trade, so a fault can be
	// timed to land in the fan-out of copies that follows one.
	traded chan struct{}

	opens, modifies, partials, closes, failures atomic.Int64
}

func newLoadGen(ctl broker.Controller, quotes broker.Session, masters []string, seed uint64) *loadGen {
	g := &loadGen{ctl: ctl, quotes: quotes, masters: masters, digits: map[string]int{}, maxOpen: 4, traded: make(chan struct{}, 1),
		rnd: rand.New(rand.NewPCG(seed, seed^0x5bd1e995))}
	for _, s := range sim.DefaultSymbols() {
		g.digits[s.Name] = s.Digits
	}
	return g
}

// events is the number of master trades made so far.
func (g *loadGen) events() int64 {
	return g.opens.Load() + g.modifies.Load() + g.partials.Load() + g.closes.Load()
}

// run trades at rate events per second until ctx ends. It paces itself with a ticker.
func (g *loadGen) run(ctx context.Context, rate float64) {
	t := time.NewTicker(time.Duration(float64(time.Second) / rate))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			g.step(ctx)
		}
	}
}

// step makes one trade on a random master.
func (g *loadGen) step(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	login := g.masters[g.rnd.IntN(len(g.masters))]
	ps, err := g.ctl.AccountPositions(ctx, login)
	if err != nil {
		g.failed(ctx)
		return
	}
	if len(ps) == 0 || (len(ps) < g.maxOpen && g.rnd.Float64() < 0.45) {
		g.open(ctx, login)
		return
	}
	p := ps[g.rnd.IntN(len(ps))]
	switch r := g.rnd.Float64(); {
	case r < 0.35:
		bid, ask, ok := g.quote(ctx, p.Symbol)
		if !ok {
			g.failed(ctx)
			return
		}
		ref := bid
		if p.Side == broker.Sell {
			ref = ask
		}
		sl, tp := g.stops(p.Symbol, p.Side, ref)
		if _, err := g.ctl.MasterModify(ctx, login, p.Ticket, sl, tp); err != nil {
			g.failed(ctx)
			return
		}
		g.modifies.Add(1)
		g.notify()
	case r < 0.6 && p.Volume >= 0.2-1e-9:
		part := reconcile.RoundDownToStep(p.Volume/2, 0.01)
		if err := g.ctl.MasterClose(ctx, login, p.Ticket, part); err != nil {
			g.failed(ctx)
			return
		}
		g.partials.Add(1)
		g.notify()
	default:
		if err := g.ctl.MasterClose(ctx, login, p.Ticket, 0); err != nil {
			g.failed(ctx)
			return
		}
		g.closes.Add(1)
		g.notify()
	}
}

// notify tells a waiting fault that a master trade was just made.
func (g *loadGen) notify() {
	select {
	case g.traded <- struct{}{}:
	default:
	}
}

// waitTrade waits for the next master trade (at most within), and reports whether one came.
func (g *loadGen) waitTrade(ctx context.Context, within time.Duration) bool {
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
func (g *loadGen) open(ctx context.Context, login string) {
	sym := loadSymbols[g.rnd.IntN(len(loadSymbols))]
	side := broker.Buy
	if g.rnd.IntN(2) == 0 {
		side = broker.Sell
	}
	bid, ask, ok := g.quote(ctx, sym)
	if !ok {
		g.failed(ctx)
		return
	}
	px := ask
	if side == broker.Sell {
		px = bid
	}
	req := broker.MasterOpenRequest{Symbol: sym, Side: side, Volume: float64(1+g.rnd.IntN(5)) / 10, Comment: "stress"}
	req.SL, req.TP = g.stops(sym, side, px)
	if _, err := g.ctl.MasterOpen(ctx, login, req); err != nil {
		g.failed(ctx)
		return
	}
	g.opens.Add(1)
	g.notify()
}

// quote reads the current bid and ask of a symbol.
func (g *loadGen) quote(ctx context.Context, sym string) (bid, ask float64, ok bool) {
	specs, err := g.quotes.Symbols(ctx)
	if err != nil {
		return 0, 0, false
	}
	for _, s := range specs {
		if s.Name == sym {
			return s.Bid, s.Ask, s.Bid > 0 && s.Ask > 0
		}
	}
	return 0, 0, false
}

// stops returns an SL 1 to 2.5 % and a TP 1.5 to 3 % away from price, on the right sides.
func (g *loadGen) stops(sym string, side broker.Side, price float64) (sl, tp float64) {
	dsl := 0.01 + 0.015*g.rnd.Float64()
	dtp := 0.015 + 0.015*g.rnd.Float64()
	f := math.Pow10(g.digits[sym])
	round := func(v float64) float64 { return math.Round(v*f) / f }
	if side == broker.Buy {
		return round(price * (1 - dsl)), round(price * (1 + dtp))
	}
	return round(price * (1 + dsl)), round(price * (1 - dtp))
}

func (g *loadGen) failed(ctx context.Context) {
	if ctx.Err() == nil {
		g.failures.Add(1)
	}
}
