package sim

import (
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/snapcopier/copier/broker"
)

// SymbolConfig specifies one instrument of the simulated server.
type SymbolConfig struct {
	// Name is the base name; an account with a symbol suffix sees Name+suffix.
	Name string
	// BaseCurrency is what one unit of the contract is ("EUR" in EURUSD); "" for indices.
	BaseCurrency string
	// QuoteCurrency is the currency prices and profits are in ("USD" in EURUSD).
	QuoteCurrency string
	// ContractSize is units per 1.0 lot.
	ContractSize float64
	// MinLot, MaxLot and LotStep bound the volume of one order.
	MinLot, MaxLot, LotStep float64
	// Digits is the number of price digits; a point is 10^-Digits.
	Digits int
	// SpreadPoints is the fixed distance between bid and ask, in points.
	SpreadPoints int
	// Price is the initial mid price.
	Price float64
	// Volatility is the relative standard deviation of one price step (0: a flat price).
	Volatility float64
	// Underlying, when set, names another symbol whose price process this one shares: the
	// same prices under a different specification (contract size, spread, digits).
	Underlying string
}

// DefaultSymbols returns the symbols of a server whose Config.Symbols is nil: four FX and
// metal pairs, two specifications of the Dow index (US30, 1 unit per lot, and DJ30, 10
// units per lot, on the same prices, so copy sizing has to align contract sizes), a
// EUR-quoted index and a crypto pair. All trade 0.01 to 100 lots in steps of 0.01.
func DefaultSymbols() []SymbolConfig {
	lots := func(c SymbolConfig) SymbolConfig {
		c.MinLot, c.MaxLot, c.LotStep = 0.01, 100, 0.01
		return c
	}
	return []SymbolConfig{
		lots(SymbolConfig{Name: "EURUSD", BaseCurrency: "EUR", QuoteCurrency: "USD", ContractSize: 100000, Digits: 5, SpreadPoints: 10, Price: 1.085, Volatility: 2e-5}),
		lots(SymbolConfig{Name: "GBPUSD", BaseCurrency: "GBP", QuoteCurrency: "USD", ContractSize: 100000, Digits: 5, SpreadPoints: 14, Price: 1.27, Volatility: 2e-5}),
		lots(SymbolConfig{Name: "USDJPY", BaseCurrency: "USD", QuoteCurrency: "JPY", ContractSize: 100000, Digits: 3, SpreadPoints: 12, Price: 150, Volatility: 2e-5}),
		lots(SymbolConfig{Name: "XAUUSD", BaseCurrency: "XAU", QuoteCurrency: "USD", ContractSize: 100, Digits: 2, SpreadPoints: 30, Price: 2350, Volatility: 4e-5}),
		lots(SymbolConfig{Name: "US30", QuoteCurrency: "USD", ContractSize: 1, Digits: 1, SpreadPoints: 20, Price: 39000, Volatility: 4e-5}),
		lots(SymbolConfig{Name: "DJ30", QuoteCurrency: "USD", ContractSize: 10, Digits: 1, SpreadPoints: 30, Price: 39000, Underlying: "US30"}),
		lots(SymbolConfig{Name: "GER40", QuoteCurrency: "EUR", ContractSize: 1, Digits: 1, SpreadPoints: 15, Price: 18000, Volatility: 4e-5}),
		lots(SymbolConfig{Name: "BTCUSD", BaseCurrency: "BTC", QuoteCurrency: "USD", ContractSize: 1, Digits: 2, SpreadPoints: 2000, Price: 65000, Volatility: 8e-5}),
	}
}

// validate reports what is wrong with a symbol configuration.
func (c SymbolConfig) validate() error {
	switch {
	case c.Name == "":
		return fmt.Errorf("symbol without a name")
	case !(c.ContractSize > 0):
		return fmt.Errorf("symbol %s: contract size must be positive", c.Name)
	case !(c.LotStep > 0) || !(c.MinLot > 0) || !(c.MaxLot >= c.MinLot):
		return fmt.Errorf("symbol %s: need 0 < MinLot <= MaxLot and LotStep > 0", c.Name)
	case c.Digits < 0 || c.Digits > 8:
		return fmt.Errorf("symbol %s: digits must be within 0..8", c.Name)
	case c.SpreadPoints < 0:
		return fmt.Errorf("symbol %s: negative spread", c.Name)
	case c.Underlying == "" && !(c.Price > 0):
		return fmt.Errorf("symbol %s: initial price must be positive", c.Name)
	case c.Volatility < 0 || math.IsNaN(c.Volatility) || math.IsInf(c.Volatility, 0):
		return fmt.Errorf("symbol %s: invalid volatility", c.Name)
	}
	return nil
}

// symbol is a configured instrument with its live state.
type symbol struct {
	cfg   SymbolConfig
	scale float64 // 10^Digits
	feed  *priceFeed
	// tradeDisabled and marketClosed are inverted so that the zero value trades.
	tradeDisabled atomic.Bool
	marketClosed  atomic.Bool
}

// quote returns the bid and ask at now, rounded to the symbol's digits.
func (s *symbol) quote(now time.Time) (bid, ask float64) {
	pts := math.Round(s.feed.at(now)*s.scale - float64(s.cfg.SpreadPoints)/2)
	return pts / s.scale, (pts + float64(s.cfg.SpreadPoints)) / s.scale
}

// closePrice is the price a position of side closes at: bid for a buy, ask for a sell.
func (s *symbol) closePrice(side broker.Side, now time.Time) float64 {
	bid, ask := s.quote(now)
	if side == broker.Buy {
		return bid
	}
	return ask
}

// roundPrice rounds p to the symbol's digits.
func (s *symbol) roundPrice(p float64) float64 {
	return math.Round(p*s.scale) / s.scale
}

// spec returns the symbol as an account with suffix sees it at now.
func (s *symbol) spec(suffix string, now time.Time) broker.SymbolSpec {
	bid, ask := s.quote(now)
	return broker.SymbolSpec{
		Name:         s.cfg.Name + suffix,
		ContractSize: s.cfg.ContractSize,
		MinLot:       s.cfg.MinLot,
		MaxLot:       s.cfg.MaxLot,
		LotStep:      s.cfg.LotStep,
		Digits:       s.cfg.Digits,
		Point:        1 / s.scale,
		TradeAllowed: !s.tradeDisabled.Load(),
		Bid:          bid,
		Ask:          ask,
	}
}

// tradable returns the error an order on the symbol gets now, or nil.
func (s *symbol) tradable() error {
	if s.tradeDisabled.Load() {
		return broker.NewError(broker.ErrPermanent, broker.CodeTradeDisabled, "trade disabled for %s", s.cfg.Name)
	}
	if s.marketClosed.Load() {
		return broker.NewError(broker.ErrMarketClosed, broker.CodeMarketClosed, "market closed for %s", s.cfg.Name)
	}
	return nil
}

// buildSymbols validates the configurations and creates the symbols with their price
// processes, in configuration order.
func buildSymbols(cfgs []SymbolConfig, seed int64, origin time.Time, tick time.Duration) ([]*symbol, map[string]*symbol) {
	list := make([]*symbol, 0, len(cfgs))
	byName := make(map[string]*symbol, len(cfgs))
	for _, c := range cfgs {
		if err := c.validate(); err != nil {
			panic("sim: " + err.Error())
		}
		if _, dup := byName[c.Name]; dup {
			panic("sim: duplicate symbol " + c.Name)
		}
		s := &symbol{cfg: c, scale: math.Pow10(c.Digits)}
		if c.Underlying == "" {
			s.feed = newPriceFeed(seed, c.Name, c.Price, c.Volatility, origin, tick)
		}
		list = append(list, s)
		byName[c.Name] = s
	}
	for _, s := range list {
		if s.cfg.Underlying == "" {
			continue
		}
		u, ok := byName[s.cfg.Underlying]
		if !ok || u.cfg.Underlying != "" {
			panic(fmt.Sprintf("sim: symbol %s: underlying %q must be a symbol with its own prices", s.cfg.Name, s.cfg.Underlying))
		}
		s.feed = u.feed
	}
	return list, byName
}
