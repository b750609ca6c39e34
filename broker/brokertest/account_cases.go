package brokertest

import (
	"context"
	"math"
	"strings"

	"github.com/snapcopier/copier/broker"
)

// accountCases returns the checks of connecting, account info, symbols and the session
// life cycle.
func accountCases() []testCase {
	return []testCase{
		{"ConnectAndBadPassword", testConnect},
		{"AccountInfo", testAccountInfo},
		{"Symbols", testSymbols},
		{"SymbolSuffix", testSymbolSuffix},
		{"ClosedSession", testClosedSession},
		{"CancelledContext", testCancelledContext},
	}
}

func testConnect(h *harness) {
	spec := h.provision("acct-connect", broker.Hedging, "")
	s := h.connect(spec)
	info, err := s.Account(h.ctx)
	h.must(err)
	if info.Login != spec.Login {
		h.t.Fatalf("connected as %q, want %q", info.Login, spec.Login)
	}
	_, err = h.env.Broker.Connect(h.ctx, broker.Credentials{Login: spec.Login, Password: "wrong"})
	h.wantErr(err, broker.ErrPermanent, broker.CodeAuthFailed)
}

func testAccountInfo(h *harness) {
	spec := broker.AccountSpec{Login: "acct-info", Password: "pw", Currency: "USD", Balance: 25000, Leverage: 200, Mode: broker.Netting}
	h.must(h.env.Control.Provision(h.ctx, spec))
	s := h.connect(spec)
	info, err := s.Account(h.ctx)
	h.must(err)
	want := broker.AccountInfo{Login: spec.Login, Currency: "USD", Balance: 25000, Equity: 25000, Leverage: 200, Mode: broker.Netting}
	if info != want {
		h.t.Fatalf("account %+v, want %+v", info, want)
	}

	// Provisioning again updates the balance.
	spec.Balance = 30000
	h.must(h.env.Control.Provision(h.ctx, spec))
	info, err = s.Account(h.ctx)
	h.must(err)
	if info.Balance != 30000 || info.Equity != 30000 {
		h.t.Fatalf("after re-provisioning: %+v, want balance and equity 30000", info)
	}
}

func testSymbols(h *harness) {
	s := h.account("acct-symbols", broker.Hedging)
	specs, err := s.Symbols(h.ctx)
	h.must(err)
	if len(specs) == 0 {
		h.t.Fatal("no symbols")
	}
	seen := map[string]bool{}
	for _, sp := range specs {
		if seen[sp.Name] {
			h.t.Fatalf("symbol %s listed twice", sp.Name)
		}
		seen[sp.Name] = true
		point := math.Pow10(-sp.Digits)
		switch {
		case sp.Name == "":
			h.t.Fatalf("symbol without a name: %+v", sp)
		case !(sp.ContractSize > 0), !(sp.MinLot > 0), sp.MaxLot < sp.MinLot, !(sp.LotStep > 0):
			h.t.Fatalf("symbol %s has invalid lot limits: %+v", sp.Name, sp)
		case math.Abs(sp.Point-point) > point*1e-9:
			h.t.Fatalf("symbol %s: point %v does not match %d digits", sp.Name, sp.Point, sp.Digits)
		case !(sp.Bid > 0) || sp.Ask < sp.Bid:
			h.t.Fatalf("symbol %s has no valid quote: bid %v ask %v", sp.Name, sp.Bid, sp.Ask)
		}
	}
}

func testSymbolSuffix(h *harness) {
	plain := h.account("acct-plain", broker.Hedging)
	suffixed := h.connect(h.provision("acct-suffix", broker.Hedging, ".m"))
	base, err := plain.Symbols(h.ctx)
	h.must(err)
	withSuffix, err := suffixed.Symbols(h.ctx)
	h.must(err)
	if len(base) != len(withSuffix) {
		h.t.Fatalf("%d symbols without suffix, %d with", len(base), len(withSuffix))
	}
	names := map[string]bool{}
	for _, sp := range withSuffix {
		name, ok := strings.CutSuffix(sp.Name, ".m")
		if !ok {
			h.t.Fatalf("symbol %q lacks the account suffix .m", sp.Name)
		}
		names[name] = true
	}
	for _, sp := range base {
		if !names[sp.Name] {
			h.t.Fatalf("symbol %q has no .m twin", sp.Name)
		}
	}

	sym := h.symbol(suffixed)
	bare := strings.TrimSuffix(sym.Name, ".m")
	_, err = suffixed.Open(h.ctx, broker.OpenRequest{Order: order(1), Symbol: bare, Side: broker.Buy, Volume: sym.MinLot})
	h.wantErr(err, broker.ErrPermanent, broker.CodeInvalidRequest)

	res := h.open(suffixed, sym.Name, broker.Buy, sym.MinLot)
	ps := h.positions(suffixed, "acct-suffix")
	if p := h.findPosition(ps, res.Ticket); p.Symbol != sym.Name {
		h.t.Fatalf("position symbol %q, want %q", p.Symbol, sym.Name)
	}
}

func testClosedSession(h *harness) {
	s := h.account("acct-closed", broker.Hedging)
	sym := h.symbol(s)
	h.must(s.Close())
	_, err := s.Account(h.ctx)
	h.wantErr(err, broker.ErrDisconnected, 0)
	_, err = s.Positions(h.ctx)
	h.wantErr(err, broker.ErrDisconnected, 0)
	_, err = s.Symbols(h.ctx)
	h.wantErr(err, broker.ErrDisconnected, 0)
	_, err = s.Open(h.ctx, broker.OpenRequest{Order: order(1), Symbol: sym.Name, Side: broker.Buy, Volume: sym.MinLot})
	h.wantErr(err, broker.ErrDisconnected, 0)
	_, err = s.ClosePosition(h.ctx, broker.CloseRequest{Order: order(1), Ticket: 1})
	h.wantErr(err, broker.ErrDisconnected, 0)
	_, err = s.Modify(h.ctx, broker.ModifyRequest{Order: order(1), Ticket: 1})
	h.wantErr(err, broker.ErrDisconnected, 0)
	_, err = s.Subscribe(h.ctx)
	h.wantErr(err, broker.ErrDisconnected, 0)

	ps, err := h.env.Control.AccountPositions(h.ctx, "acct-closed")
	h.must(err)
	if len(ps) != 0 {
		h.t.Fatalf("a closed session opened %+v", ps)
	}
}

func testCancelledContext(h *harness) {
	s := h.account("acct-cancel", broker.Hedging)
	sym := h.symbol(s)
	ctx, cancel := context.WithCancel(h.ctx)
	cancel()
	if _, err := s.Open(ctx, broker.OpenRequest{Order: order(1), Symbol: sym.Name, Side: broker.Buy, Volume: sym.MinLot}); err == nil {
		h.t.Fatal("Open with a cancelled context succeeded")
	}
	if _, err := s.Positions(ctx); err == nil {
		h.t.Fatal("Positions with a cancelled context succeeded")
	}
	if ps := h.positions(s, "acct-cancel"); len(ps) != 0 {
		h.t.Fatalf("an order with a cancelled context executed: %+v", ps)
	}
}
