package fix_test

import (
	"errors"
	"strconv"
	"strings"
	"sync"
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
// from the configured list and the copy marker in Text (stops are protective orders:
// TestFIX44ProtectiveOrders).
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
	// A Modify of a position the book does not hold is refused before anything is sent.
	_, err = sess.Modify(ctx, broker.ModifyRequest{Order: order(), Ticket: 1, SL: sym.Bid / 2})
	wantClass(t, err, broker.ErrPermanent)
	log, lerr := e.sim.OrderLog(ctx, 0, 0)
	if lerr != nil || len(log) != 1 || log[0].Comment != "" && log[0].Comment != "mc42" {
		t.Fatalf("order log %+v (%v): want the one open, nothing of the refused modify", log, lerr)
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
	// A hedging account cannot be served in fix44 (a close by opposite order nets): refused
	// for the node, and for an account that names fix44 on a node that says hedging.
	if _, err := fix.New(fix.Config{Addr: "127.0.0.1:1", Dialect: fixwire.DialectFIX44, Symbols: simSymbols(t, e.sim), PositionMode: broker.Hedging}); err == nil || !strings.Contains(err.Error(), "hedging") {
		t.Errorf("fix44 with hedging: %v, want a refusal naming hedging", err)
	}
	h, err := fix.New(fix.Config{Addr: e.front.Addr(), Symbols: simSymbols(t, e.sim), PositionMode: broker.Hedging})
	if err != nil {
		t.Fatal(err)
	}
	_, err = h.Connect(t.Context(), broker.Credentials{Login: "d", Password: "pw", FIX: broker.FIXSession{Dialect: "fix44"}})
	wantClass(t, err, broker.ErrPermanent)
	if err == nil || !strings.Contains(err.Error(), "hedging") {
		t.Errorf("account in fix44 on a hedging node: %v", err)
	}
	// The account's own position mode comes first: hedging in fix44 is refused on a netting
	// node, before anything is sent, and so is a mode that is not one.
	for _, c := range []struct {
		fix  broker.FIXSession
		want string
	}{
		{broker.FIXSession{Dialect: "fix44", PositionMode: "hedging", Symbols: simSymbols(t, e.sim)}, "hedging account cannot be served"},
		{broker.FIXSession{PositionMode: "hedge"}, "account FIX setting position_mode"},
	} {
		_, err := e.broker.Connect(t.Context(), broker.Credentials{Login: "d", Password: "pw", FIX: c.fix})
		wantClass(t, err, broker.ErrPermanent)
		var be *broker.TradeError
		if !errors.As(err, &be) || be.Code != broker.CodeInvalidRequest || !strings.Contains(err.Error(), c.want) {
			t.Errorf("account %+v: %v, want CodeInvalidRequest naming %q", c.fix, err, c.want)
		}
	}
	if n := len(e.front.Logons()); n != 0 {
		t.Fatalf("%d logons for refused configurations, want none", n)
	}
	// A netting account in fix44 on a node that says hedging: the account's setting wins.
	netting, err := h.Connect(t.Context(), broker.Credentials{Login: "d", Password: "pw", FIX: broker.FIXSession{Dialect: "fix44", PositionMode: "netting"}})
	if err != nil {
		t.Fatalf("a netting fix44 account on a hedging node: %v", err)
	}
	_ = netting.Close()

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

// Against a strict venue (no RequestForPositions, no position ids) the fix44 broker tracks
// the account's positions from its own fills: an open is read back with its ticket, magic
// and copy marker, a partial close reduces it, a close removes it, and a second broker
// with the same book (another node after a takeover) sees the same positions.
func TestFIX44PositionBook(t *testing.T) {
	s := sim.New(sim.Config{Seed: 1, AutoProvision: true, DefaultAccount: broker.AccountSpec{Currency: "USD", Balance: 1e5, Leverage: 100, Mode: broker.Netting}})
	book := fix.NewMemBook()
	cfg := fix.Config{Dialect: fixwire.DialectFIX44, Symbols: simSymbols(t, s), Book: book}
	e := newEnvFor(t, s, envOptions{front: fixfront.Options{Strict: true}, client: cfg})
	ctx := t.Context()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	ns := connect(t, e, "netted")
	sym := firstSymbol(t, ns)
	res, err := ns.Open(ctx, broker.OpenRequest{Order: order(), Symbol: sym.Name, Side: broker.Buy, Volume: 3 * sym.MinLot, Magic: 7, Comment: "mc42"})
	must(err)
	ps, err := ns.Positions(ctx)
	must(err)
	if len(ps) != 1 || ps[0].Ticket != res.Ticket || ps[0].Magic != 7 || ps[0].Comment != "mc42" || ps[0].Volume != 3*sym.MinLot || ps[0].Side != broker.Buy {
		t.Fatalf("positions %+v, want the open (ticket %d, magic 7, mc42, %v lots)", ps, res.Ticket, 3*sym.MinLot)
	}

	// Another node takes the account over (the first one's session ends): it reads the
	// same book.
	must(ns.Close())
	// The second node reaches the venue through a front of its own. quickfixgo registers
	// sessions process-wide, so the first front must have let go of the account's session
	// before the second accepts it: its Close waits for that (the client's Close does not
	// wait for the venue to see the logout).
	must(e.front.Close())
	e2 := newEnvFor(t, s, envOptions{front: fixfront.Options{Strict: true}, client: cfg})
	ts := connect(t, e2, "netted")
	_, err = ts.ClosePosition(ctx, broker.CloseRequest{Order: order(), Ticket: res.Ticket, Volume: sym.MinLot})
	must(err)
	ps, err = ts.Positions(ctx)
	must(err)
	if len(ps) != 1 || !near(ps[0].Volume, 2*sym.MinLot) {
		t.Fatalf("after a partial close: %+v, want %v lots left", ps, 2*sym.MinLot)
	}
	_, err = ts.ClosePosition(ctx, broker.CloseRequest{Order: order(), Ticket: res.Ticket})
	must(err)
	if ps, err := ts.Positions(ctx); err != nil || len(ps) != 0 {
		t.Fatalf("after the close: %+v (%v), want none", ps, err)
	}
	// The venue agrees: nothing is left open.
	if vs, err := s.Connect(ctx, broker.Credentials{Login: "netted"}); err == nil {
		defer func() { _ = vs.Close() }()
		if vp, err := vs.Positions(ctx); err != nil || len(vp) != 0 {
			t.Fatalf("the venue holds %+v (%v), want none", vp, err)
		}
	} else {
		t.Fatal(err)
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

// A fix44 venue that refuses CollateralInquiry as unsupported (the strict front) does not
// say the balance and equity: Account returns the login, the netting mode and
// EquityUnknown without an error, and the session asks the venue once, not on every call.
// (The ctrader dialect still fails on the refusal: TestRefusalsMatchedAndClassified.)
func TestFIX44AccountWithoutCollateralInquiry(t *testing.T) {
	s := sim.New(sim.Config{Seed: 1, AutoProvision: true})
	var mu sync.Mutex
	inquiries := 0
	e := newEnvFor(t, s, envOptions{front: fixfront.Options{Strict: true},
		client: fix.Config{Dialect: fixwire.DialectFIX44, Symbols: simSymbols(t, s)},
		wire: func(raw string) {
			if strings.Contains(raw, "\x0135="+fixwire.MsgCollateralInquiry+"\x01") {
				mu.Lock()
				inquiries++
				mu.Unlock()
			}
		}})
	sess := connect(t, e, "nocoll")
	for i := range 3 {
		info, err := sess.Account(t.Context())
		if err != nil {
			t.Fatalf("account %d: %v, want no error", i, err)
		}
		want := broker.AccountInfo{Login: "nocoll", Mode: broker.Netting, EquityUnknown: true}
		if info != want {
			t.Fatalf("account %d: %+v, want %+v", i, info, want)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if inquiries != 1 {
		t.Fatalf("%d CollateralInquiries sent, want 1 (the refusal is remembered)", inquiries)
	}
}

// TestFIX44AccountFromAStandardCollateralReport: a standard venue that answers
// CollateralInquiry says the equity (TotalNetValue) but not the position mode (no standard
// field): the account's configured mode stands in, never 0 (which the planner would skip
// every copy for).
func TestFIX44AccountFromAStandardCollateralReport(t *testing.T) {
	s := sim.New(sim.Config{Seed: 1, AutoProvision: true, DefaultAccount: broker.AccountSpec{Currency: "USD", Balance: 5e4, Leverage: 100, Mode: broker.Netting}})
	e := newEnvFor(t, s, envOptions{front: fixfront.Options{Strict: true, StandardCollateral: true},
		client: fix.Config{Dialect: fixwire.DialectFIX44, Symbols: simSymbols(t, s)}})
	info, err := connect(t, e, "stdcoll").Account(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode != broker.Netting || info.EquityUnknown || info.Equity != 5e4 || info.Currency != "USD" || info.Login != "stdcoll" {
		t.Fatalf("account %+v, want netting (configured), equity 50000 USD known", info)
	}
}
