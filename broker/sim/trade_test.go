package sim_test

import (
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/broker/sim"
)

// TestNettingReversal: an opposite order larger than the position closes it and opens
// the rest the other way under a new ticket; the loss of the spread is booked.
func TestNettingReversal(t *testing.T) {
	clock := newFakeClock()
	srv := sim.New(sim.Config{Seed: 1, Clock: clock.Now})
	srv.SetPrice("EURUSD", 1.1)
	s := newAccount(t, srv, "n", broker.Netting)
	feed, err := s.Subscribe(t.Context())
	if err != nil {
		t.Fatal(err)
	}

	buy := mustOpen(t, s, "EURUSD", broker.Buy, 0.1)
	if buy.Price != 1.1001 {
		t.Fatalf("bought at %v, want the ask 1.1001", buy.Price)
	}
	add := mustOpen(t, s, "EURUSD", broker.Buy, 0.1)
	if add.Ticket != buy.Ticket {
		t.Fatalf("adding changed the ticket: %d -> %d", buy.Ticket, add.Ticket)
	}
	rev := mustOpen(t, s, "EURUSD", broker.Sell, 0.5)
	if rev.Ticket == buy.Ticket || rev.Price != 1.1 || rev.Volume != 0.5 {
		t.Fatalf("reversal result %+v: want a new ticket, price 1.1, volume 0.5", rev)
	}
	ps := mustPositions(t, s)
	if len(ps) != 1 || ps[0].Ticket != rev.Ticket || ps[0].Side != broker.Sell || ps[0].Volume != 0.3 || ps[0].OpenPrice != 1.1 {
		t.Fatalf("after the reversal: %+v", ps)
	}

	want := []struct {
		kind   broker.EventKind
		ticket int64
		side   broker.Side
		vol    float64
	}{
		{broker.Opened, buy.Ticket, broker.Buy, 0.1},
		{broker.Modified, buy.Ticket, broker.Buy, 0.2},
		{broker.Closed, buy.Ticket, broker.Buy, 0.2},
		{broker.Opened, rev.Ticket, broker.Sell, 0.3},
	}
	for i, w := range want {
		ev := recv(t, feed)
		if ev.Seq != int64(i+1) || ev.Kind != w.kind || ev.Position.Ticket != w.ticket || ev.Position.Side != w.side || ev.Position.Volume != w.vol {
			t.Fatalf("event %d: %+v, want %+v", i+1, ev, w)
		}
	}

	// 0.2 lots bought at the ask and sold at the bid lose 10 points: 0.2 × 100,000 × 0.0001 = 2.
	info, err := s.Account(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if info.Balance != 9998 {
		t.Fatalf("balance %v, want 9998", info.Balance)
	}
	// The open sell 0.3 is marked at the ask: 0.3 × 100,000 × -0.0001 = -3.
	if info.Equity != 9995 {
		t.Fatalf("equity %v, want 9995", info.Equity)
	}

	// A smaller opposite order reduces, an equal one flattens.
	mustOpen(t, s, "EURUSD", broker.Buy, 0.1)
	if ps := mustPositions(t, s); len(ps) != 1 || ps[0].Volume != 0.2 || ps[0].Ticket != rev.Ticket {
		t.Fatalf("after reducing: %+v", ps)
	}
	if ev := recv(t, feed); ev.Kind != broker.PartiallyClosed || ev.Position.Volume != 0.2 {
		t.Fatalf("reduce event %+v", ev)
	}
	mustOpen(t, s, "EURUSD", broker.Buy, 0.2)
	if ps := mustPositions(t, s); len(ps) != 0 {
		t.Fatalf("not flat: %+v", ps)
	}
	if ev := recv(t, feed); ev.Kind != broker.Closed || ev.Position.Ticket != rev.Ticket {
		t.Fatalf("flatten event %+v", ev)
	}
}

// TestProfitAndConversion books P/L in the account currency.
func TestProfitAndConversion(t *testing.T) {
	clock := newFakeClock()
	srv := sim.New(sim.Config{Seed: 1, Clock: clock.Now})
	srv.SetPrice("EURUSD", 1.1)
	srv.SetPrice("USDJPY", 150)
	s := newAccount(t, srv, "p", broker.Hedging)

	eur := mustOpen(t, s, "EURUSD", broker.Buy, 1) // at 1.1001
	srv.SetPrice("EURUSD", 1.1011)
	info, _ := s.Account(t.Context())
	if info.Equity != 10100 || info.Balance != 10000 {
		t.Fatalf("floating +100: %+v", info)
	}
	res, err := s.ClosePosition(t.Context(), broker.CloseRequest{Order: ord(), Ticket: eur.Ticket})
	if err != nil || res.Price != 1.1011 {
		t.Fatalf("close: %+v %v", res, err)
	}
	info, _ = s.Account(t.Context())
	if info.Balance != 10100 || info.Equity != 10100 {
		t.Fatalf("after closing +100: %+v", info)
	}

	jpy := mustOpen(t, s, "USDJPY", broker.Buy, 1) // at 150.012
	srv.SetPrice("USDJPY", 151.012)                // +1 yen × 100,000 = 100,000 JPY
	if _, err := s.ClosePosition(t.Context(), broker.CloseRequest{Order: ord(), Ticket: jpy.Ticket}); err != nil {
		t.Fatal(err)
	}
	info, _ = s.Account(t.Context())
	want := 10100 + 100000/151.018
	if math.Abs(info.Balance-want) > 0.01 {
		t.Fatalf("balance %v, want %.2f (100,000 JPY at the USDJPY mid)", info.Balance, want)
	}
}

func TestMarginCheck(t *testing.T) {
	srv := sim.New(sim.Config{Seed: 1})
	provision(t, srv, broker.AccountSpec{Login: "m", Balance: 1000, Leverage: 100, Mode: broker.Netting})
	s := connect(t, srv, "m")
	mustOpen(t, s, "EURUSD", broker.Buy, 0.5) // ~542 margin
	_, err := s.Open(t.Context(), openReq("EURUSD", broker.Buy, 0.5))
	wantCode(t, err, broker.ErrPermanent, broker.CodeNoMoney)
	// Reducing needs no margin; reversing into a bigger position does.
	mustOpen(t, s, "EURUSD", broker.Sell, 0.2)
	_, err = s.Open(t.Context(), openReq("EURUSD", broker.Sell, 1.5))
	wantCode(t, err, broker.ErrPermanent, broker.CodeNoMoney)
	mustOpen(t, s, "EURUSD", broker.Sell, 0.6)
	if ps := mustPositions(t, s); len(ps) != 1 || ps[0].Side != broker.Sell || ps[0].Volume != 0.3 {
		t.Fatalf("positions %+v", ps)
	}
}

func TestCommentRules(t *testing.T) {
	srv := sim.New(sim.Config{Seed: 1, OverwriteCommentOnPartialClose: true})
	s := newAccount(t, srv, "c", broker.Hedging)
	feed, err := s.Subscribe(t.Context())
	if err != nil {
		t.Fatal(err)
	}

	// 30 ASCII bytes and a 2-byte character: cut before the character, not inside it.
	long := strings.Repeat("x", 30) + "é"
	req := openReq("EURUSD", broker.Buy, 0.3)
	req.Comment = long
	res, err := s.Open(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if ev := recv(t, feed); ev.Position.Comment != strings.Repeat("x", 30) {
		t.Fatalf("comment %q, want 30 x", ev.Position.Comment)
	}
	if _, err := s.ClosePosition(t.Context(), broker.CloseRequest{Order: ord(), Ticket: res.Ticket, Volume: 0.1}); err != nil {
		t.Fatal(err)
	}
	ev := recv(t, feed)
	want := "from #" + strconv.FormatInt(res.Ticket, 10)
	if ev.Kind != broker.PartiallyClosed || ev.Position.Ticket != res.Ticket || ev.Position.Comment != want {
		t.Fatalf("partial close event %+v: want ticket %d and comment %q", ev, res.Ticket, want)
	}
	if ps := mustPositions(t, s); ps[0].Comment != want || ps[0].Volume != 0.2 {
		t.Fatalf("position after the partial close: %+v", ps[0])
	}

	// Without the option the comment stays.
	plain := sim.New(sim.Config{Seed: 1})
	s2 := newAccount(t, plain, "c", broker.Hedging)
	req = openReq("EURUSD", broker.Buy, 0.3)
	req.Comment = "keep me"
	res, _ = s2.Open(t.Context(), req)
	_, _ = s2.ClosePosition(t.Context(), broker.CloseRequest{Order: ord(), Ticket: res.Ticket, Volume: 0.1})
	if ps := mustPositions(t, s2); ps[0].Comment != "keep me" {
		t.Fatalf("comment changed to %q", ps[0].Comment)
	}
}

func TestTriggerStops(t *testing.T) {
	clock := newFakeClock()
	srv := sim.New(sim.Config{Seed: 1, Clock: clock.Now, TriggerStops: true})
	srv.SetPrice("EURUSD", 1.1)
	s := newAccount(t, srv, "s", broker.Hedging)
	feed, _ := s.Subscribe(t.Context())

	buy := openReq("EURUSD", broker.Buy, 0.1)
	buy.SL, buy.TP, buy.Comment = 1.095, 1.105, "copy"
	b, err := s.Open(t.Context(), buy)
	if err != nil {
		t.Fatal(err)
	}
	sell := openReq("EURUSD", broker.Sell, 0.1)
	sell.SL, sell.TP = 1.2, 1.095
	sl, err := s.Open(t.Context(), sell)
	if err != nil {
		t.Fatal(err)
	}
	recv(t, feed)
	recv(t, feed)

	// A closed market holds the stops.
	srv.SetMarketOpen("EURUSD", false)
	srv.SetPrice("EURUSD", 1.09)
	if n := srv.CheckStops(); n != 0 {
		t.Fatalf("%d stops fired on a closed market", n)
	}
	srv.SetMarketOpen("EURUSD", true)
	if n := srv.CheckStops(); n != 2 {
		t.Fatalf("CheckStops closed %d, want 2", n)
	}
	got := map[int64]string{}
	for range 2 {
		ev := recv(t, feed)
		if ev.Kind != broker.Closed {
			t.Fatalf("event %+v", ev)
		}
		got[ev.Position.Ticket] = ev.Position.Comment
	}
	if got[b.Ticket] != "[sl]" || got[sl.Ticket] != "[tp]" {
		t.Fatalf("stop comments %v: want [sl] for %d and [tp] for %d", got, b.Ticket, sl.Ticket)
	}
	// The buy lost 0.1 × 100,000 × (1.1001 - 1.09) = 101; the sell won (1.1 - 1.0901) × 10,000 = 99.
	if info, _ := s.Account(t.Context()); info.Balance != 9998 {
		t.Fatalf("balance %v, want 9998", info.Balance)
	}

	// Stops also fire when the account is used.
	req := openReq("EURUSD", broker.Buy, 0.1)
	req.TP = 1.1
	if _, err := s.Open(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	srv.SetPrice("EURUSD", 1.1)
	if ps := mustPositions(t, s); len(ps) != 0 {
		t.Fatalf("take profit did not fire: %+v", ps)
	}

	// Without TriggerStops nothing fires.
	off := sim.New(sim.Config{Seed: 1, Clock: clock.Now})
	off.SetPrice("EURUSD", 1.1)
	s2 := newAccount(t, off, "s", broker.Hedging)
	if _, err := s2.Open(t.Context(), buy); err != nil {
		t.Fatal(err)
	}
	off.SetPrice("EURUSD", 1.0)
	if off.CheckStops() != 0 || len(mustPositions(t, s2)) != 1 {
		t.Fatal("a stop fired without TriggerStops")
	}
}

func TestMarketClosedAndTradeDisabled(t *testing.T) {
	srv := sim.New(sim.Config{Seed: 1})
	provision(t, srv, broker.AccountSpec{Login: "x", Balance: 1e6, SymbolSuffix: ".pro"})
	s := connect(t, srv, "x")
	res := mustOpen(t, s, "XAUUSD.pro", broker.Buy, 0.1)

	srv.SetMarketOpen("XAUUSD", false)
	_, err := s.Open(t.Context(), openReq("XAUUSD.pro", broker.Buy, 0.1))
	wantCode(t, err, broker.ErrMarketClosed, broker.CodeMarketClosed)
	_, err = s.ClosePosition(t.Context(), broker.CloseRequest{Order: ord(), Ticket: res.Ticket})
	wantCode(t, err, broker.ErrMarketClosed, broker.CodeMarketClosed)
	mustOpen(t, s, "EURUSD.pro", broker.Buy, 0.1) // other symbols trade
	srv.SetMarketOpen("XAUUSD", true)

	srv.SetTradeAllowed("XAUUSD", false)
	_, err = s.Open(t.Context(), openReq("XAUUSD.pro", broker.Buy, 0.1))
	wantCode(t, err, broker.ErrPermanent, broker.CodeTradeDisabled)
	specs, _ := s.Symbols(t.Context())
	for _, sp := range specs {
		if sp.TradeAllowed != (sp.Name != "XAUUSD.pro") {
			t.Fatalf("spec %s: TradeAllowed %v", sp.Name, sp.TradeAllowed)
		}
	}
	srv.SetTradeAllowed("XAUUSD", true)
	if _, err := s.ClosePosition(t.Context(), broker.CloseRequest{Order: ord(), Ticket: res.Ticket}); err != nil {
		t.Fatal(err)
	}
}

func TestPendingOrdersRejected(t *testing.T) {
	srv := sim.New(sim.Config{Seed: 1})
	s := newAccount(t, srv, "p", broker.Hedging)
	for _, typ := range []broker.OrderType{broker.Limit, broker.Stop} {
		req := openReq("EURUSD", broker.Buy, 0.1)
		req.Type, req.Price = typ, 1.0
		_, err := s.Open(t.Context(), req)
		wantCode(t, err, broker.ErrPermanent, broker.CodeInvalidRequest)
	}
	req := openReq("EURUSD", 0, 0.1)
	_, err := s.Open(t.Context(), req)
	wantCode(t, err, broker.ErrPermanent, broker.CodeInvalidRequest)
}

func TestConnectAndProvision(t *testing.T) {
	strict := sim.New(sim.Config{Seed: 1})
	_, err := strict.Connect(t.Context(), broker.Credentials{Login: "ghost"})
	wantCode(t, err, broker.ErrPermanent, broker.CodeAuthFailed)

	auto := sim.New(sim.Config{Seed: 1, AutoProvision: true, DefaultAccount: broker.AccountSpec{Currency: "EUR", Leverage: 30, Mode: broker.Netting}})
	s, err := auto.Connect(t.Context(), broker.Credentials{Login: "ghost", Password: "anything"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	info, _ := s.Account(t.Context())
	want := broker.AccountInfo{Login: "ghost", Currency: "EUR", Balance: 10000, Equity: 10000, Leverage: 30, Mode: broker.Netting}
	if info != want {
		t.Fatalf("auto-provisioned %+v, want %+v", info, want)
	}

	// Mode changes only without open positions; zero mode keeps it.
	mustOpen(t, s, "EURUSD", broker.Buy, 0.01)
	err = auto.Provision(t.Context(), broker.AccountSpec{Login: "ghost", Balance: 500, Mode: broker.Hedging})
	wantCode(t, err, broker.ErrPermanent, broker.CodeInvalidRequest)
	if err := auto.Provision(t.Context(), broker.AccountSpec{Login: "ghost", Balance: 500}); err != nil {
		t.Fatal(err)
	}
	if info, _ := s.Account(t.Context()); info.Mode != broker.Netting || info.Balance != 500 {
		t.Fatalf("after re-provisioning: %+v", info)
	}
	for _, bad := range []broker.AccountSpec{{}, {Login: "x", Mode: 9}, {Login: "x", Balance: -1}} {
		wantCode(t, auto.Provision(t.Context(), bad), broker.ErrPermanent, broker.CodeInvalidRequest)
	}
}

// TestServerClockStamps: results, positions, events and the log carry the server clock.
func TestServerClockStamps(t *testing.T) {
	clock := newFakeClock()
	srv := sim.New(sim.Config{Seed: 1, Clock: clock.Now})
	s := newAccount(t, srv, "c", broker.Hedging)
	feed, _ := s.Subscribe(t.Context())
	clock.Advance(90_000_000_000)
	now := clock.Now()
	req := openReq("EURUSD", broker.Buy, 0.1)
	res, err := s.Open(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	ev := recv(t, feed)
	ps := mustPositions(t, s)
	es := logOf(t, srv, req.RequestID)
	if !res.ServerTime.Equal(now) || !ev.ServerTime.Equal(now) || !ps[0].OpenTime.Equal(now) || !es[0].ServerTime.Equal(now) {
		t.Fatalf("stamps %v %v %v %v, want %v", res.ServerTime, ev.ServerTime, ps[0].OpenTime, es[0].ServerTime, now)
	}
}

// TestPriceProcess: prices move with the clock, repeat with the seed, and the two Dow
// specifications share one price.
func TestPriceProcess(t *testing.T) {
	quotes := func(seed int64) []float64 {
		clock := newFakeClock()
		srv := sim.New(sim.Config{Seed: seed, Clock: clock.Now})
		s := newAccount(t, srv, "q", broker.Hedging)
		var out []float64
		for range 20 {
			specs, err := s.Symbols(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			bySym := map[string]broker.SymbolSpec{}
			for _, sp := range specs {
				bySym[sp.Name] = sp
				if math.Abs(sp.Ask-sp.Bid) > 1e6*sp.Point || sp.Ask < sp.Bid {
					t.Fatalf("bad quote %+v", sp)
				}
			}
			us30, dj30 := bySym["US30"], bySym["DJ30"]
			if math.Abs((us30.Bid+us30.Ask)/2-(dj30.Bid+dj30.Ask)/2) > 1 || us30.ContractSize == dj30.ContractSize {
				t.Fatalf("US30 %+v and DJ30 %+v should share prices with different contract sizes", us30, dj30)
			}
			out = append(out, bySym["EURUSD"].Bid)
			clock.Advance(sim.DefaultTickInterval)
		}
		return out
	}
	a, b, c := quotes(5), quotes(5), quotes(6)
	moved, differ := false, false
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("tick %d: %v vs %v with the same seed", i, a[i], b[i])
		}
		moved = moved || a[i] != a[0]
		differ = differ || a[i] != c[i]
	}
	if !moved || !differ {
		t.Fatalf("prices moved %v, differ across seeds %v", moved, differ)
	}
}

func TestOrderLogLimit(t *testing.T) {
	srv := sim.New(sim.Config{Seed: 1, OrderLogLimit: 3})
	s := newAccount(t, srv, "l", broker.Hedging)
	for range 10 {
		mustOpen(t, s, "EURUSD", broker.Buy, 0.01)
	}
	log, _ := srv.OrderLog(t.Context(), 0, 0)
	if len(log) < 3 || log[len(log)-1].Seq != 10 {
		t.Fatalf("log %+v: want at least the 3 newest, ending at Seq 10", log)
	}
	for i := 1; i < len(log); i++ {
		if log[i].Seq != log[i-1].Seq+1 {
			t.Fatalf("gap in the kept log at %d", log[i].Seq)
		}
	}
	tail, _ := srv.OrderLog(t.Context(), 8, 0)
	if len(tail) != 2 || tail[0].Seq != 9 {
		t.Fatalf("tail after 8: %+v", tail)
	}
}
