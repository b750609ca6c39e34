package sim

import (
	"math"
	"time"

	"github.com/snapcopier/copier/broker"
)

// usdRate names the symbol that prices one currency in US dollars.
type usdRate struct {
	sym    *symbol
	invert bool // the symbol is USDxxx: one xxx is 1/mid dollars
}

// buildUSDRates maps every currency that some symbol pairs with USD to that symbol (the
// first one configured wins).
func buildUSDRates(symbols []*symbol) map[string]usdRate {
	rates := make(map[string]usdRate)
	for _, s := range symbols {
		base, quote := s.cfg.BaseCurrency, s.cfg.QuoteCurrency
		switch {
		case quote == "USD" && base != "" && base != "USD":
			if _, ok := rates[base]; !ok {
				rates[base] = usdRate{sym: s}
			}
		case base == "USD" && quote != "" && quote != "USD":
			if _, ok := rates[quote]; !ok {
				rates[quote] = usdRate{sym: s, invert: true}
			}
		}
	}
	return rates
}

// usdPer returns how many US dollars one unit of ccy is worth at now. A currency that no
// symbol prices counts as one dollar.
func (s *Server) usdPer(ccy string, now time.Time) float64 {
	r, ok := s.usd[ccy]
	if ccy == "USD" || !ok {
		return 1
	}
	bid, ask := r.sym.quote(now)
	mid := (bid + ask) / 2
	if r.invert {
		return 1 / mid
	}
	return mid
}

// rate converts an amount in currency from into currency to at now, through US dollars.
func (s *Server) rate(from, to string, now time.Time) float64 {
	if from == to || from == "" || to == "" {
		return 1
	}
	return s.usdPer(from, now) / s.usdPer(to, now)
}

// profit is the P/L in the account currency of volume lots of p closed at price.
func (s *Server) profit(a *account, p *position, volume, price float64, now time.Time) float64 {
	diff := (price - p.OpenPrice) * float64(p.Side)
	return diff * volume * p.sym.cfg.ContractSize * s.rate(p.sym.cfg.QuoteCurrency, a.currency, now)
}

// margin is the margin in the account currency of volume lots of sym at price.
func (s *Server) margin(a *account, sym *symbol, volume, price float64, now time.Time) float64 {
	notional := volume * sym.cfg.ContractSize * price * s.rate(sym.cfg.QuoteCurrency, a.currency, now)
	return notional / float64(a.leverage)
}

// equityLocked is balance plus the floating P/L of every open position at now.
// fundsLocked is the account's balance and equity now, as results and events carry them.
func (s *Server) fundsLocked(a *account, now time.Time) broker.Funds {
	return broker.Funds{Known: true, Balance: a.balance, Equity: s.equityLocked(a, now)}
}

func (s *Server) equityLocked(a *account, now time.Time) float64 {
	eq := a.balance
	for _, p := range a.positions {
		eq += s.profit(a, p, p.Volume, p.sym.closePrice(p.Side, now), now)
	}
	return roundCents(eq)
}

// usedMarginLocked is the margin every open position holds, at its open price.
func (s *Server) usedMarginLocked(a *account, now time.Time) float64 {
	var m float64
	for _, p := range a.positions {
		m += s.margin(a, p.sym, p.Volume, p.OpenPrice, now)
	}
	return m
}

// checkMarginLocked rejects an order that needs more margin than the account has free.
// release is margin that the same order frees first (a netting reversal's closed part).
func (s *Server) checkMarginLocked(a *account, need, release float64, now time.Time) error {
	free := s.equityLocked(a, now) - s.usedMarginLocked(a, now) + release
	if need > free {
		return errNoMoney("margin %.2f %s needed, %.2f free", need, a.currency, math.Max(free, 0))
	}
	return nil
}

// realiseLocked books the P/L of closing volume lots of p at price into the balance.
func (s *Server) realiseLocked(a *account, p *position, volume, price float64, now time.Time) {
	a.balance = roundCents(a.balance + s.profit(a, p, volume, price, now))
}

func roundCents(v float64) float64 { return math.Round(v*100) / 100 }
