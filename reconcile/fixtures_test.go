package reconcile

import (
	"time"

	"github.com/snapcopier/copier/broker"
)

// now is the time every fixture plans at.
func now() time.Time { return time.Date(2025, 3, 3, 10, 0, 0, 0, time.UTC) }

// fx is a forex symbol spec: 100,000 units a lot, 0.01–100 lots in 0.01 steps, 5 digits,
// quoted 1.10000/1.10010.
func fx(name string) broker.SymbolSpec {
	return broker.SymbolSpec{Name: name, ContractSize: 100_000, MinLot: 0.01, MaxLot: 100, LotStep: 0.01,
		Digits: 5, Point: 0.00001, TradeAllowed: true, Bid: 1.10000, Ask: 1.10010}
}

// index is an index CFD spec with the given contract size: 0.1–50 lots in 0.1 steps, 1
// digit, quoted 18000.0/18001.0.
func index(name string, contract float64) broker.SymbolSpec {
	return broker.SymbolSpec{Name: name, ContractSize: contract, MinLot: 0.1, MaxLot: 50, LotStep: 0.1,
		Digits: 1, Point: 0.1, TradeAllowed: true, Bid: 18000.0, Ask: 18001.0}
}

// specs builds a symbol map.
func specs(ss ...broker.SymbolSpec) map[string]broker.SymbolSpec {
	m := make(map[string]broker.SymbolSpec, len(ss))
	for _, s := range ss {
		m[s.Name] = s
	}
	return m
}

// testInput is a link 1 (magic 1001, default settings) from a 10,000 master to a 2,500
// follower of the given mode, both with EURUSD and GER40 (contract size 10 on the master,
// 100 on the follower).
func testInput(mode broker.AccountMode) Input {
	return Input{
		Master: AccountState{
			Info:    broker.AccountInfo{Login: "master", Balance: 10_000, Equity: 10_000, Mode: broker.Hedging},
			Symbols: specs(fx("EURUSD"), index("GER40", 10)),
		},
		Follower: AccountState{
			Info:    broker.AccountInfo{Login: "follower", Balance: 2_500, Equity: 2_500, Mode: mode},
			Symbols: specs(fx("EURUSD"), index("GER40", 100)),
		},
		Link: Link{ID: 1, Magic: 1001, Settings: DefaultSettings()},
		Now:  now(),
	}
}

// mpos is a master position opened age ago at 1.10000 (EURUSD) without stops.
func mpos(ticket int64, symbol string, side broker.Side, volume float64, age time.Duration) broker.Position {
	return broker.Position{Ticket: ticket, Symbol: symbol, Side: side, Volume: volume, OpenPrice: 1.10000,
		OpenTime: now().Add(-age)}
}

// copyOf is a follower copy of master ticket by link magic 1001.
func copyOf(ticket, master int64, symbol string, side broker.Side, volume float64) broker.Position {
	return broker.Position{Ticket: ticket, Symbol: symbol, Side: side, Volume: volume, OpenPrice: 1.10010,
		Magic: 1001, Comment: Marker(master), OpenTime: now().Add(-time.Minute)}
}

// kinds lists the kinds of a plan's actions.
func kinds(r Result) []ActionKind {
	out := make([]ActionKind, len(r.Actions))
	for i, a := range r.Actions {
		out[i] = a.Kind
	}
	return out
}

// skipReasons lists the reasons of a plan's skips.
func skipReasons(r Result) []SkipReason {
	out := make([]SkipReason, len(r.Skipped))
	for i, s := range r.Skipped {
		out[i] = s.Reason
	}
	return out
}
