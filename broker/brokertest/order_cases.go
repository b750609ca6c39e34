package brokertest

import (
	"strings"
	"sync"

	"github.com/snapcopier/copier/broker"
)

// orderCases returns the checks of opening, closing and modifying positions, and of the
// rules orders must follow.
func orderCases() []testCase {
	return []testCase{
		{"OpenModifyPartialClose", testOpenModifyClose},
		{"UnknownTicketAndSymbol", testUnknownTicketAndSymbol},
		{"VolumeRules", testVolumeRules},
		{"StopsValidation", testStopsValidation},
		{"NotEnoughMoney", testNoMoney},
		{"CommentTruncated", testCommentTruncated},
		{"ConcurrentOrders", testConcurrentOrders},
		{"WorstPriceBoundsTheFill", testWorstPrice},
	}
}

// testWorstPrice: an open's worst price (broker.OpenRequest.WorstPrice) bounds its fill:
// one the market is well beyond (a thousand points) is refused as a requote and changes
// nothing; one well within fills at it or better. Both sides, on a netting account (the
// kind every venue serves), read through the Controller.
func testWorstPrice(h *harness) {
	const login = "acct-worst"
	s := h.account(login, broker.Netting)
	sym := h.symbol(s)
	dev := 1000 * sym.Point
	net := func() float64 {
		h.t.Helper()
		ps, err := h.env.Control.AccountPositions(h.ctx, login)
		h.must(err)
		var v float64
		for _, p := range ps {
			if p.Side == broker.Buy {
				v += p.Volume
			} else {
				v -= p.Volume
			}
		}
		return v
	}
	for _, c := range []struct {
		side   broker.Side
		worst  float64
		filled bool
	}{
		{broker.Buy, sym.Ask - dev, false}, {broker.Buy, sym.Ask + dev, true},
		{broker.Sell, sym.Bid + dev, false}, {broker.Sell, sym.Bid - dev, true},
	} {
		before := net()
		res, err := s.Open(h.ctx, broker.OpenRequest{Order: order(1), Symbol: sym.Name, Side: c.side, Volume: sym.MinLot, WorstPrice: c.worst})
		if !c.filled {
			h.wantErr(err, broker.ErrRetryable, broker.CodeRequote)
			if after := net(); !sameVolume(after, before) {
				h.t.Fatalf("a %v refused for its worst price %v changed the position from %v to %v lots", c.side, c.worst, before, after)
			}
			continue
		}
		h.must(err)
		if c.side == broker.Buy && res.Price > c.worst || c.side == broker.Sell && res.Price < c.worst {
			h.t.Fatalf("a %v filled at %v, beyond its worst price %v", c.side, res.Price, c.worst)
		}
	}
	if v := net(); !sameVolume(v, 0) {
		h.t.Fatalf("after a buy and a sell of %v lots the account holds %v", sym.MinLot, v)
	}
}

func testOpenModifyClose(h *harness) {
	const login = "acct-orders"
	s := h.account(login, broker.Hedging)
	sym := h.symbol(s)
	sl, tp := sym.Bid*0.95, sym.Ask*1.05
	res, err := s.Open(h.ctx, broker.OpenRequest{
		Order: order(1), Symbol: sym.Name, Side: broker.Buy, Volume: lots(sym, 3),
		SL: sl, TP: tp, Magic: 4242, Comment: "brokertest",
	})
	h.must(err)
	if res.Ticket == 0 || !(res.Price > 0) || !sameVolume(res.Volume, lots(sym, 3)) || res.ServerTime.IsZero() {
		h.t.Fatalf("implausible open result %+v", res)
	}
	p := h.findPosition(h.positions(s, login), res.Ticket)
	if p.Symbol != sym.Name || p.Side != broker.Buy || !sameVolume(p.Volume, lots(sym, 3)) || p.Magic != 4242 ||
		p.Comment != "brokertest" || p.OpenPrice != res.Price || p.OpenTime.IsZero() {
		h.t.Fatalf("position %+v does not match the order (result %+v)", p, res)
	}
	if !near(p.SL, sl, sym.Point) || !near(p.TP, tp, sym.Point) {
		h.t.Fatalf("position stops %v/%v, want %v/%v", p.SL, p.TP, sl, tp)
	}

	sl2, tp2 := sym.Bid*0.9, sym.Ask*1.1
	mres, err := s.Modify(h.ctx, broker.ModifyRequest{Order: order(1), Ticket: res.Ticket, SL: sl2, TP: tp2})
	h.must(err)
	if mres.Ticket != res.Ticket {
		h.t.Fatalf("modify result names ticket %d, want %d", mres.Ticket, res.Ticket)
	}
	p = h.findPosition(h.positions(s, login), res.Ticket)
	if !near(p.SL, sl2, sym.Point) || !near(p.TP, tp2, sym.Point) {
		h.t.Fatalf("after modify: stops %v/%v, want %v/%v", p.SL, p.TP, sl2, tp2)
	}

	cres, err := s.ClosePosition(h.ctx, broker.CloseRequest{Order: order(1), Ticket: res.Ticket, Volume: lots(sym, 1)})
	h.must(err)
	if !sameVolume(cres.Volume, lots(sym, 1)) || !(cres.Price > 0) {
		h.t.Fatalf("implausible partial close result %+v", cres)
	}
	ps := h.positions(s, login)
	if len(ps) != 1 || !sameVolume(ps[0].Volume, lots(sym, 2)) || ps[0].Side != broker.Buy || ps[0].Symbol != sym.Name {
		h.t.Fatalf("after closing 1 of 3 lots: %+v, want one buy of %v", ps, lots(sym, 2))
	}

	cres, err = s.ClosePosition(h.ctx, broker.CloseRequest{Order: order(1), Ticket: ps[0].Ticket})
	h.must(err)
	if !sameVolume(cres.Volume, lots(sym, 2)) {
		h.t.Fatalf("full close executed %v lots, want %v", cres.Volume, lots(sym, 2))
	}
	if ps := h.positions(s, login); len(ps) != 0 {
		h.t.Fatalf("positions left after the full close: %+v", ps)
	}
}

func testUnknownTicketAndSymbol(h *harness) {
	s := h.account("acct-unknown", broker.Hedging)
	sym := h.symbol(s)
	_, err := s.Open(h.ctx, broker.OpenRequest{Order: order(1), Symbol: "NOSUCHSYMBOL", Side: broker.Buy, Volume: sym.MinLot})
	h.wantErr(err, broker.ErrPermanent, broker.CodeInvalidRequest)
	_, err = s.ClosePosition(h.ctx, broker.CloseRequest{Order: order(1), Ticket: 987654321})
	h.wantErr(err, broker.ErrPermanent, broker.CodeInvalidRequest)
	_, err = s.Modify(h.ctx, broker.ModifyRequest{Order: order(1), Ticket: 987654321})
	h.wantErr(err, broker.ErrPermanent, broker.CodeInvalidRequest)
	_, err = h.env.Control.MasterOpen(h.ctx, "acct-unknown", broker.MasterOpenRequest{Symbol: "NOSUCHSYMBOL", Side: broker.Buy, Volume: sym.MinLot})
	h.wantErr(err, broker.ErrPermanent, broker.CodeInvalidRequest)
	err = h.env.Control.MasterClose(h.ctx, "acct-unknown", 987654321, 0)
	h.wantErr(err, broker.ErrPermanent, broker.CodeInvalidRequest)
}

func testVolumeRules(h *harness) {
	const login = "acct-volume"
	s := h.account(login, broker.Hedging)
	sym := h.symbol(s)
	bad := []float64{0, -sym.MinLot, sym.MinLot / 2, sym.MaxLot + sym.LotStep, sym.MinLot + sym.LotStep/2}
	for _, v := range bad {
		_, err := s.Open(h.ctx, broker.OpenRequest{Order: order(1), Symbol: sym.Name, Side: broker.Buy, Volume: v})
		h.wantErr(err, broker.ErrPermanent, broker.CodeInvalidVolume)
	}
	if ps := h.positions(s, login); len(ps) != 0 {
		h.t.Fatalf("rejected volumes opened %+v", ps)
	}

	// Float noise within tolerance is on the step: 3 × min lot summed, not multiplied.
	noisy := sym.MinLot + sym.MinLot + sym.MinLot
	res := h.open(s, sym.Name, broker.Buy, noisy)
	if !sameVolume(res.Volume, lots(sym, 3)) {
		h.t.Fatalf("opened %v lots, want %v", res.Volume, lots(sym, 3))
	}
	for _, v := range []float64{lots(sym, 4), sym.MinLot / 2, sym.MinLot + sym.LotStep/2} {
		_, err := s.ClosePosition(h.ctx, broker.CloseRequest{Order: order(1), Ticket: res.Ticket, Volume: v})
		h.wantErr(err, broker.ErrPermanent, broker.CodeInvalidVolume)
	}
	_, err := s.Open(h.ctx, broker.OpenRequest{Order: order(1), Symbol: sym.Name, Side: broker.Buy, Volume: sym.MaxLot})
	h.must(err)
	if ps := h.positions(s, login); len(ps) != 2 {
		h.t.Fatalf("want 2 positions, got %+v", ps)
	}
}

func testStopsValidation(h *harness) {
	const login = "acct-stops"
	s := h.account(login, broker.Hedging)
	sym := h.symbol(s)
	below, above := sym.Bid*0.95, sym.Ask*1.05
	bad := []struct {
		side   broker.Side
		sl, tp float64
	}{
		{broker.Buy, above, 0},
		{broker.Buy, 0, below},
		{broker.Buy, above, below},
		{broker.Sell, below, 0},
		{broker.Sell, 0, above},
		{broker.Sell, below, above},
	}
	for _, c := range bad {
		_, err := s.Open(h.ctx, broker.OpenRequest{Order: order(1), Symbol: sym.Name, Side: c.side, Volume: sym.MinLot, SL: c.sl, TP: c.tp})
		h.wantErr(err, broker.ErrPermanent, broker.CodeInvalidStops)
	}
	if ps := h.positions(s, login); len(ps) != 0 {
		h.t.Fatalf("orders with invalid stops opened %+v", ps)
	}

	buy, err := s.Open(h.ctx, broker.OpenRequest{Order: order(1), Symbol: sym.Name, Side: broker.Buy, Volume: sym.MinLot, SL: below, TP: above})
	h.must(err)
	sell, err := s.Open(h.ctx, broker.OpenRequest{Order: order(1), Symbol: sym.Name, Side: broker.Sell, Volume: sym.MinLot, SL: above, TP: below})
	h.must(err)

	_, err = s.Modify(h.ctx, broker.ModifyRequest{Order: order(1), Ticket: buy.Ticket, SL: above})
	h.wantErr(err, broker.ErrPermanent, broker.CodeInvalidStops)
	_, err = s.Modify(h.ctx, broker.ModifyRequest{Order: order(1), Ticket: sell.Ticket, TP: above})
	h.wantErr(err, broker.ErrPermanent, broker.CodeInvalidStops)
	p := h.findPosition(h.positions(s, login), buy.Ticket)
	if !near(p.SL, below, sym.Point) || !near(p.TP, above, sym.Point) {
		h.t.Fatalf("a rejected modify changed the stops: %+v", p)
	}

	// Zero removes both stops.
	_, err = s.Modify(h.ctx, broker.ModifyRequest{Order: order(1), Ticket: buy.Ticket})
	h.must(err)
	if p := h.findPosition(h.positions(s, login), buy.Ticket); p.SL != 0 || p.TP != 0 {
		h.t.Fatalf("stops not removed: %+v", p)
	}
}

func testNoMoney(h *harness) {
	spec := broker.AccountSpec{Login: "acct-poor", Password: "pw", Currency: "USD", Balance: 0, Leverage: 100, Mode: broker.Hedging}
	h.must(h.env.Control.Provision(h.ctx, spec))
	s := h.connect(spec)
	sym := h.symbol(s)
	_, err := s.Open(h.ctx, broker.OpenRequest{Order: order(1), Symbol: sym.Name, Side: broker.Buy, Volume: sym.MinLot})
	h.wantErr(err, broker.ErrPermanent, broker.CodeNoMoney)
}

func testCommentTruncated(h *harness) {
	const login = "acct-comment"
	s := h.account(login, broker.Hedging)
	sym := h.symbol(s)
	long := strings.Repeat("abcdefghij", 4)
	res, err := s.Open(h.ctx, broker.OpenRequest{Order: order(1), Symbol: sym.Name, Side: broker.Buy, Volume: sym.MinLot, Comment: long})
	h.must(err)
	mp, err := h.env.Control.MasterOpen(h.ctx, login, broker.MasterOpenRequest{Symbol: sym.Name, Side: broker.Sell, Volume: sym.MinLot, Comment: long})
	h.must(err)
	ps := h.positions(s, login)
	for _, ticket := range []int64{res.Ticket, mp.Ticket} {
		p := h.findPosition(ps, ticket)
		if len(p.Comment) > broker.MaxCommentLen || !strings.HasPrefix(long, p.Comment) || p.Comment == "" {
			h.t.Fatalf("comment %q: want a non-empty prefix of %q of at most %d bytes", p.Comment, long, broker.MaxCommentLen)
		}
	}
}

func testConcurrentOrders(h *harness) {
	const login = "acct-concurrent"
	const workers, perWorker = 8, 5
	s := h.account(login, broker.Hedging)
	sym := h.symbol(s)
	tickets := make(chan int64, workers*perWorker)
	errs := make(chan error, workers*perWorker)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range perWorker {
				res, err := s.Open(h.ctx, broker.OpenRequest{Order: order(1), Symbol: sym.Name, Side: broker.Buy, Volume: sym.MinLot})
				if err != nil {
					errs <- err
					continue
				}
				tickets <- res.Ticket
			}
		})
	}
	wg.Wait()
	close(tickets)
	close(errs)
	for err := range errs {
		h.t.Fatalf("concurrent open: %v", err)
	}
	seen := map[int64]bool{}
	for tk := range tickets {
		if seen[tk] {
			h.t.Fatalf("ticket %d given twice", tk)
		}
		seen[tk] = true
	}
	ps := h.positions(s, login)
	if len(ps) != workers*perWorker {
		h.t.Fatalf("%d positions, want %d", len(ps), workers*perWorker)
	}

	for _, p := range ps {
		wg.Go(func() {
			if _, err := s.ClosePosition(h.ctx, broker.CloseRequest{Order: order(1), Ticket: p.Ticket}); err != nil {
				h.t.Errorf("concurrent close of %d: %v", p.Ticket, err)
			}
		})
	}
	wg.Wait()
	if ps := h.positions(s, login); len(ps) != 0 {
		h.t.Fatalf("positions left after closing all: %+v", ps)
	}
}

// near reports whether two prices are within one point.
func near(a, b, point float64) bool {
	d := a - b
	return d <= point && -d <= point
}
