package fix_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/broker/fix"
	"github.com/snapcopier/copier/broker/fix/fixwire"
	"github.com/snapcopier/copier/broker/sim"
	"github.com/snapcopier/copier/broker/sim/fixfront"
)

// simSymbols is the simulator's symbol list as the FIX front numbers it (1, 2, …): the
// configured list of a venue without SecurityList.
func simSymbols(t *testing.T, s *sim.Server) []fix.Symbol {
	t.Helper()
	ss, err := s.Connect(t.Context(), broker.Credentials{Login: "symbols-reader"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ss.Close() }()
	specs, err := ss.Symbols(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	out := make([]fix.Symbol, len(specs))
	for i, sp := range specs {
		out[i] = fix.Symbol{SymbolSpec: sp, ID: strconv.Itoa(i + 1)}
	}
	return out
}

// The fix44 dialect trades with a venue that knows only standard FIX 4.4 (the strict
// front): its market order passes the venue's stock dictionary and fills, with the symbol
// from the configured list and the copy marker in Text; what standard FIX cannot carry
// (stops on an order, a stops change) is refused before anything is sent.
func TestFIX44AgainstAStrictVenue(t *testing.T) {
	s := sim.New(sim.Config{Seed: 1, AutoProvision: true})
	e := newEnvFor(t, s, envOptions{front: fixfront.Options{Strict: true},
		client: fix.Config{Dialect: fixwire.DialectFIX44, Symbols: simSymbols(t, s)}})
	sess := connect(t, e, "std")
	sym := firstSymbol(t, sess)
	ctx := t.Context()
	res, err := sess.Open(ctx, broker.OpenRequest{Order: order(), Symbol: sym.Name, Side: broker.Buy, Volume: sym.MinLot, Comment: "mc42"})
	if err != nil {
		t.Fatalf("open in fix44 against a strict venue: %v", err)
	}
	if res.Volume != sym.MinLot || res.Price <= 0 {
		t.Fatalf("fill %+v, want %v lots at a price", res, sym.MinLot)
	}
	_, err = sess.Open(ctx, broker.OpenRequest{Order: order(), Symbol: sym.Name, Side: broker.Buy, Volume: sym.MinLot, SL: sym.Bid / 2})
	wantClass(t, err, broker.ErrPermanent)
	_, err = sess.Modify(ctx, broker.ModifyRequest{Order: order(), Ticket: 1, SL: sym.Bid / 2})
	wantClass(t, err, broker.ErrPermanent)
	log, lerr := e.sim.OrderLog(ctx, 0, 0)
	if lerr != nil || len(log) != 1 || log[0].Comment != "" && log[0].Comment != "mc42" {
		t.Fatalf("order log %+v (%v): want the one open, nothing of the refused ones", log, lerr)
	}
}

// The dialect comes from the account, else the node; a configuration that cannot work is
// refused when the session is made, naming what is wrong, before anything is sent.
func TestDialectConfiguration(t *testing.T) {
	if _, err := fix.New(fix.Config{Addr: "127.0.0.1:1", Dialect: "fix42"}); err == nil || !strings.Contains(err.Error(), "fix42") {
		t.Fatalf("unknown node dialect: %v", err)
	}
	good := broker.SymbolSpec{Name: "EURUSD", ContractSize: 100000, MinLot: 0.01, LotStep: 0.01, MaxLot: 100, Digits: 5}
	for name, c := range map[string]struct {
		list []fix.Symbol
		want string
	}{
		"no name":           {[]fix.Symbol{{SymbolSpec: broker.SymbolSpec{ContractSize: 1, MinLot: 1, LotStep: 1}}}, "no name"},
		"twice":             {[]fix.Symbol{{SymbolSpec: good}, {SymbolSpec: good, ID: "2"}}, "listed twice"},
		"same venue id":     {[]fix.Symbol{{SymbolSpec: good, ID: "1"}, {SymbolSpec: broker.SymbolSpec{Name: "GBPUSD", ContractSize: 1, MinLot: 1, LotStep: 1}, ID: "1"}}, "venue id"},
		"contract size":     {[]fix.Symbol{{SymbolSpec: broker.SymbolSpec{Name: "X", MinLot: 1, LotStep: 1}}}, "contract size"},
		"lot step":          {[]fix.Symbol{{SymbolSpec: broker.SymbolSpec{Name: "X", ContractSize: 1, MinLot: 1}}}, "step"},
		"max below min":     {[]fix.Symbol{{SymbolSpec: broker.SymbolSpec{Name: "X", ContractSize: 1, MinLot: 1, LotStep: 1, MaxLot: 0.5}}}, "maximum"},
		"digits":            {[]fix.Symbol{{SymbolSpec: broker.SymbolSpec{Name: "X", ContractSize: 1, MinLot: 1, LotStep: 1, Digits: 11}}}, "digits"},
		"id with spaces":    {[]fix.Symbol{{SymbolSpec: good, ID: "EUR USD"}}, "venue id"},
		"name with a space": {[]fix.Symbol{{SymbolSpec: broker.SymbolSpec{Name: "EUR USD", ContractSize: 1, MinLot: 1, LotStep: 1}, ID: "1"}}, "the name has a space"},
	} {
		if _, err := fix.New(fix.Config{Addr: "127.0.0.1:1", Symbols: c.list}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error naming %q", name, err, c.want)
		}
	}

	e := newEnv(t, envOptions{})
	for _, c := range []struct {
		dialect, want string
	}{{"fix44", "configure the venue's symbols"}, {"fix5", "FIX dialect \"fix5\""}} {
		_, err := e.broker.Connect(t.Context(), broker.Credentials{Login: "d", Password: "pw", FIX: broker.FIXSession{Dialect: c.dialect}})
		wantClass(t, err, broker.ErrPermanent)
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("account dialect %q: %v, want %q", c.dialect, err, c.want)
		}
	}
	if n := len(e.front.Logons()); n != 0 {
		t.Fatalf("%d logons for refused configurations, want none", n)
	}

	// A node whose default is fix44 still speaks ctrader to an account that says so: its
	// symbols come from the venue's SecurityList, not the node's list.
	s := sim.New(sim.Config{Seed: 1, AutoProvision: true})
	e = newEnvFor(t, s, envOptions{client: fix.Config{Dialect: fixwire.DialectFIX44, Symbols: []fix.Symbol{{SymbolSpec: good, ID: "1"}}}})
	own, err := e.broker.Connect(t.Context(), broker.Credentials{Login: "c", Password: "pw", FIX: broker.FIXSession{Dialect: "ctrader"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = own.Close() })
	specs, err := own.Symbols(t.Context())
	if err != nil || len(specs) < 2 {
		t.Fatalf("ctrader account under a fix44 node: symbols %+v (%v), want the venue's list", specs, err)
	}
}

// A fix44 close is an opposite order naming no position: where the account holds two
// positions in the symbol (hedging) it could close the wrong one, so it is refused before
// anything is sent; with one position it closes it.
func TestFIX44CloseNeedsOnePosition(t *testing.T) {
	s := sim.New(sim.Config{Seed: 1, AutoProvision: true, DefaultAccount: broker.AccountSpec{Currency: "USD", Balance: 1e5, Leverage: 100, Mode: broker.Netting}})
	e := newEnvFor(t, s, envOptions{client: fix.Config{Dialect: fixwire.DialectFIX44, Symbols: simSymbols(t, s)}})
	ctx := t.Context()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	// A hedging account with two EURUSD positions.
	must(s.Provision(ctx, broker.AccountSpec{Login: "hedged", Currency: "USD", Balance: 1e5, Leverage: 100, Mode: broker.Hedging}))
	hs := connect(t, e, "hedged")
	sym := firstSymbol(t, hs)
	a, err := hs.Open(ctx, broker.OpenRequest{Order: order(), Symbol: sym.Name, Side: broker.Buy, Volume: sym.MinLot})
	must(err)
	_, err = hs.Open(ctx, broker.OpenRequest{Order: order(), Symbol: sym.Name, Side: broker.Sell, Volume: 2 * sym.MinLot})
	must(err)
	before, err := s.OrderLog(ctx, 0, 0)
	must(err)
	_, err = hs.ClosePosition(ctx, broker.CloseRequest{Order: order(), Ticket: a.Ticket})
	wantClass(t, err, broker.ErrPermanent)
	if after, _ := s.OrderLog(ctx, 0, 0); len(after) != len(before) {
		t.Fatalf("a refused close reached the server: %+v", after[len(before):])
	}

	// A netting account: the opposite order closes the one position.
	ns := connect(t, e, "netted")
	_, err = ns.Open(ctx, broker.OpenRequest{Order: order(), Symbol: sym.Name, Side: broker.Buy, Volume: sym.MinLot})
	must(err)
	ps, err := ns.Positions(ctx)
	must(err)
	if len(ps) != 1 {
		t.Fatalf("positions %+v, want one", ps)
	}
	if _, err := ns.ClosePosition(ctx, broker.CloseRequest{Order: order(), Ticket: ps[0].Ticket}); err != nil {
		t.Fatal(err)
	}
	if ps, err := ns.Positions(ctx); err != nil || len(ps) != 0 {
		t.Fatalf("after the close: %+v (%v), want none", ps, err)
	}
}
