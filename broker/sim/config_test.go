package sim_test

import (
	"testing"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/broker/sim"
)

func TestCustomSymbols(t *testing.T) {
	srv := sim.New(sim.Config{Seed: 1, Symbols: []sim.SymbolConfig{
		{Name: "ABC", QuoteCurrency: "USD", ContractSize: 5, MinLot: 0.1, MaxLot: 2, LotStep: 0.1, Digits: 2, SpreadPoints: 4, Price: 50},
	}})
	s := newAccount(t, srv, "c", broker.Hedging)
	specs, err := s.Symbols(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(specs) != 1 || specs[0].Name != "ABC" || specs[0].Point != 0.01 || specs[0].Ask-specs[0].Bid < 0.039 {
		t.Fatalf("specs %+v", specs)
	}
	_, err = s.Open(t.Context(), openReq("ABC", broker.Buy, 0.05))
	wantCode(t, err, broker.ErrPermanent, broker.CodeInvalidVolume)
	_, err = s.Open(t.Context(), openReq("EURUSD", broker.Buy, 0.1))
	wantCode(t, err, broker.ErrPermanent, broker.CodeInvalidRequest)
	mustOpen(t, s, "ABC", broker.Sell, 0.3)
}

func TestInvalidConfigPanics(t *testing.T) {
	good := sim.SymbolConfig{Name: "X", ContractSize: 1, MinLot: 0.01, MaxLot: 1, LotStep: 0.01, Digits: 2, Price: 10}
	bad := map[string]func(c *sim.SymbolConfig){
		"no name":          func(c *sim.SymbolConfig) { c.Name = "" },
		"no contract size": func(c *sim.SymbolConfig) { c.ContractSize = 0 },
		"min above max":    func(c *sim.SymbolConfig) { c.MinLot = 2 },
		"no step":          func(c *sim.SymbolConfig) { c.LotStep = 0 },
		"digits":           func(c *sim.SymbolConfig) { c.Digits = 12 },
		"spread":           func(c *sim.SymbolConfig) { c.SpreadPoints = -1 },
		"price":            func(c *sim.SymbolConfig) { c.Price = 0 },
		"volatility":       func(c *sim.SymbolConfig) { c.Volatility = -1 },
		"underlying":       func(c *sim.SymbolConfig) { c.Underlying = "NOPE" },
	}
	for name, breakIt := range bad {
		t.Run(name, func(t *testing.T) {
			c := good
			breakIt(&c)
			defer func() {
				if recover() == nil {
					t.Fatal("New accepted an invalid symbol")
				}
			}()
			sim.New(sim.Config{Symbols: []sim.SymbolConfig{c}})
		})
	}
	t.Run("duplicate", func(t *testing.T) {
		defer func() {
			if recover() == nil {
				t.Fatal("New accepted a duplicate symbol")
			}
		}()
		sim.New(sim.Config{Symbols: []sim.SymbolConfig{good, good}})
	})
	t.Run("faults", func(t *testing.T) {
		defer func() {
			if recover() == nil {
				t.Fatal("New accepted an invalid fault profile")
			}
		}()
		sim.New(sim.Config{Faults: broker.Faults{DropEventRate: 2}})
	})
}
