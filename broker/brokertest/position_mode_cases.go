package brokertest

import "github.com/snapcopier/copier/broker"

// positionModeCases returns the checks of how netting and hedging accounts aggregate
// positions.
func positionModeCases() []testCase {
	return []testCase{
		{"NettingMergesSymbol", testNetting},
		{"HedgingKeepsPositionsApart", testHedging},
	}
}

func testNetting(h *harness) {
	const login = "acct-netting"
	s := h.account(login, broker.Netting)
	sym := h.symbol(s)
	want := func(side broker.Side, n int) broker.Position {
		h.t.Helper()
		ps := h.positions(s, login)
		if len(ps) != 1 || ps[0].Side != side || !sameVolume(ps[0].Volume, lots(sym, n)) || ps[0].Symbol != sym.Name {
			h.t.Fatalf("netting positions %+v: want one %v of %v", ps, side, lots(sym, n))
		}
		return ps[0]
	}

	first := h.open(s, sym.Name, broker.Buy, lots(sym, 1))
	h.open(s, sym.Name, broker.Buy, lots(sym, 2))
	if p := want(broker.Buy, 3); p.Ticket != first.Ticket {
		h.t.Fatalf("adding to a netting position changed its ticket from %d to %d", first.Ticket, p.Ticket)
	}
	h.open(s, sym.Name, broker.Sell, lots(sym, 1))
	want(broker.Buy, 2)
	h.open(s, sym.Name, broker.Sell, lots(sym, 4)) // reverses: 2 buy - 4 sell = 2 sell
	p := want(broker.Sell, 2)
	h.open(s, sym.Name, broker.Buy, lots(sym, 2))
	if ps := h.positions(s, login); len(ps) != 0 {
		h.t.Fatalf("netting position %d not flat after an equal opposite order: %+v", p.Ticket, ps)
	}
}

func testHedging(h *harness) {
	const login = "acct-hedging"
	s := h.account(login, broker.Hedging)
	sym := h.symbol(s)
	a := h.open(s, sym.Name, broker.Buy, lots(sym, 1))
	b := h.open(s, sym.Name, broker.Buy, lots(sym, 1))
	c := h.open(s, sym.Name, broker.Sell, lots(sym, 1))
	if a.Ticket == b.Ticket || b.Ticket == c.Ticket || a.Ticket == c.Ticket {
		h.t.Fatalf("hedging tickets not distinct: %d %d %d", a.Ticket, b.Ticket, c.Ticket)
	}
	ps := h.positions(s, login)
	if len(ps) != 3 {
		h.t.Fatalf("hedging account holds %+v, want 3 positions", ps)
	}
	if p := h.findPosition(ps, c.Ticket); p.Side != broker.Sell {
		h.t.Fatalf("sell position %+v", p)
	}
}
