package fix_test

import (
	"errors"
	"testing"

	"github.com/quickfixgo/quickfix"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/broker/fix"
	"github.com/snapcopier/copier/broker/fix/fixwire"
	"github.com/snapcopier/copier/broker/sim"
	"github.com/snapcopier/copier/broker/sim/fixfront"
)

// TestOpenCarriesItsWorstPrice: an open's worst price (a link's deviation bound) holds at
// the fill in both dialects. In ctrader the order carries it (9014) and the venue refuses
// a fill beyond it as a requote; in fix44, against a venue of standard FIX only, the order
// is a limit at it, immediate or cancel, and the venue cancels it unfilled (39=4,
// CumQty 0), which the client reports as a requote. Either way nothing executes; an order
// whose worst price the fill meets, or that has none, executes at it or better. A flat
// market: bid 1.09995, ask 1.10005.
func TestOpenCarriesItsWorstPrice(t *testing.T) {
	for _, d := range []fixwire.Dialect{fixwire.DialectCTrader, fixwire.DialectFIX44} {
		t.Run(string(d), func(t *testing.T) {
			srv := sim.New(sim.Config{Seed: 3, AutoProvision: true,
				DefaultAccount: broker.AccountSpec{Currency: "USD", Balance: 1e5, Leverage: 100, Mode: broker.Netting},
				Symbols: []sim.SymbolConfig{{Name: "EURUSD", BaseCurrency: "EUR", QuoteCurrency: "USD",
					ContractSize: 100000, MinLot: 0.01, MaxLot: 100, LotStep: 0.01, Digits: 5, SpreadPoints: 10, Price: 1.1}}})
			o := envOptions{client: fix.Config{Dialect: d}}
			if d == fixwire.DialectFIX44 {
				o.front = fixfront.Options{Strict: true}
				o.client.Symbols, o.client.Book = simSymbols(t, srv), fix.NewMemBook()
			}
			e := newEnvFor(t, srv, o)
			s := connect(t, e, "worst")
			ctx := t.Context()
			lots := 0.0 // the account's net position, in lots (buys positive)
			for _, tc := range []struct {
				side   broker.Side
				worst  float64
				filled bool
			}{
				{broker.Buy, 1.10004, false}, {broker.Buy, 1.10005, true}, {broker.Buy, 0, true},
				{broker.Sell, 1.09996, false}, {broker.Sell, 1.09995, true},
			} {
				res, err := s.Open(ctx, broker.OpenRequest{Order: order(), Symbol: "EURUSD", Side: tc.side, Type: broker.Market, Volume: 0.1, WorstPrice: tc.worst})
				if !tc.filled {
					var te *broker.TradeError
					if !errors.As(err, &te) || te.Class != broker.ErrRetryable || te.Code != broker.CodeRequote {
						t.Fatalf("%v with worst price %v: %v, want a requote", tc.side, tc.worst, err)
					}
				} else {
					if err != nil {
						t.Fatalf("%v with worst price %v: %v", tc.side, tc.worst, err)
					}
					if tc.worst != 0 && (tc.side == broker.Buy && res.Price > tc.worst || tc.side == broker.Sell && res.Price < tc.worst) {
						t.Fatalf("%v filled at %v beyond its worst price %v", tc.side, res.Price, tc.worst)
					}
					if tc.side == broker.Buy {
						lots += 0.1
					} else {
						lots -= 0.1
					}
				}
				ps, err := srv.AccountPositions(ctx, "worst")
				if err != nil {
					t.Fatal(err)
				}
				net := 0.0
				for _, p := range ps {
					if p.Side == broker.Buy {
						net += p.Volume
					} else {
						net -= p.Volume
					}
				}
				if d := net - lots; d > 1e-9 || d < -1e-9 {
					t.Fatalf("after %v with worst price %v: net position %v lots, want %v", tc.side, tc.worst, net, lots)
				}
			}
		})
	}
}

// TestCancelledIOCReports: the report of an immediate-or-cancel order the venue cancelled
// (39=4) or let expire (39=C) ends the order: with nothing filled a requote (retryable,
// nothing executed), with part filled a result of what filled, at its average price.
func TestCancelledIOCReports(t *testing.T) {
	report := func(status, cumQty, avgPx string) *quickfix.Message {
		m := quickfix.NewMessage()
		m.Header.SetString(quickfix.Tag(35), fixwire.MsgExecutionReport)
		m.Body.SetString(fixwire.TagExecType, status)
		m.Body.SetString(fixwire.TagOrdStatus, status)
		m.Body.SetString(fixwire.TagCumQty, cumQty)
		m.Body.SetString(fixwire.TagAvgPx, avgPx)
		m.Body.SetString(fixwire.TagLeavesQty, "0")
		m.Body.SetString(fixwire.TagTransactTime, "20261207-12:00:00.000")
		m.Body.SetString(fixwire.TagText, "not filled within the limit")
		return m
	}
	for _, status := range []string{fixwire.StatusCanceled, fixwire.StatusExpired} {
		var res broker.OrderResult
		done, err := fix.OrderReply(&res, 100_000)(report(status, "0", "0"))
		var te *broker.TradeError
		if !done || !errors.As(err, &te) || te.Class != broker.ErrRetryable || te.Code != broker.CodeRequote {
			t.Fatalf("39=%s, nothing filled: done %v, %v; want a requote", status, done, err)
		}
		res = broker.OrderResult{}
		done, err = fix.OrderReply(&res, 100_000)(report(status, "30000", "1.10002"))
		if !done || err != nil || res.Volume != 0.3 || res.Price != 1.10002 || res.ServerTime.IsZero() {
			t.Fatalf("39=%s, 30,000 of the units filled: done %v, %+v, %v; want 0.3 lots at 1.10002", status, done, res, err)
		}
	}
}
