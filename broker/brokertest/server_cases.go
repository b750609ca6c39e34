package brokertest

import (
	"time"

	"github.com/google/uuid"
	"github.com/snapcopier/copier/broker"
)

// serverCases returns the checks of fencing tokens, de-duplication and the order log.
func serverCases() []testCase {
	return []testCase{
		{"TokenEnforcement", testTokens},
		{"DedupRequests", testDedup},
		{"OrderLog", testOrderLog},
		{"ExpiredDeadline", testExpired},
		{"Fence", testFence},
	}
}

// testExpired: an order that arrives after its deadline is refused and never executes,
// whatever the request; one with a deadline ahead executes.
func testExpired(h *harness) {
	const login = "acct-expired"
	s := h.account(login, broker.Hedging)
	sym := h.symbol(s)
	late := order(1)
	late.Deadline = time.Now().Add(-time.Second)
	_, err := s.Open(h.ctx, broker.OpenRequest{Order: late, Symbol: sym.Name, Side: broker.Buy, Volume: sym.MinLot})
	h.wantErr(err, broker.ErrExpired, broker.CodeExpired)
	ok := order(1)
	ok.Deadline = time.Now().Add(time.Minute)
	first, err := s.Open(h.ctx, broker.OpenRequest{Order: ok, Symbol: sym.Name, Side: broker.Buy, Volume: sym.MinLot})
	h.must(err)
	late.RequestID = uuid.New()
	_, err = s.ClosePosition(h.ctx, broker.CloseRequest{Order: late, Ticket: first.Ticket})
	h.wantErr(err, broker.ErrExpired, broker.CodeExpired)
	late.RequestID = uuid.New()
	_, err = s.Modify(h.ctx, broker.ModifyRequest{Order: late, Ticket: first.Ticket})
	h.wantErr(err, broker.ErrExpired, broker.CodeExpired)
	if ps := h.positions(s, login); len(ps) != 1 {
		h.t.Fatalf("want only the open with a deadline ahead, got %+v", ps)
	}
	for _, e := range h.orderLog() {
		if e.Login == login && e.Executed && !e.Deadline.IsZero() && e.Deadline.Before(e.ServerTime) {
			h.t.Fatalf("log entry %+v executed after its deadline", e)
		}
	}
}

// testFence: Fence raises the highest token seen without an order; a lower token is then
// fenced, and a lower or expired Fence fails.
func testFence(h *harness) {
	const login = "acct-fence"
	s := h.account(login, broker.Hedging)
	sym := h.symbol(s)
	h.must(h.env.Control.SetOptions(h.ctx, broker.ServerOptions{EnforceTokens: true}))
	h.must(s.Fence(h.ctx, order(8)))
	if h.env.NoTokenFence {
		// The token rises with orders only: 7 is still accepted, then 8 raises it.
		if _, err := s.Open(h.ctx, broker.OpenRequest{Order: order(7), Symbol: sym.Name, Side: broker.Buy, Volume: sym.MinLot}); err != nil {
			h.t.Fatalf("after a Fence that cannot raise the token, token 7: %v", err)
		}
		late := order(9)
		late.Deadline = time.Now().Add(-time.Second)
		h.wantErr(s.Fence(h.ctx, late), broker.ErrExpired, broker.CodeExpired)
		return
	}
	_, err := s.Open(h.ctx, broker.OpenRequest{Order: order(7), Symbol: sym.Name, Side: broker.Buy, Volume: sym.MinLot})
	h.wantErr(err, broker.ErrFenced, broker.CodeFencedToken)
	h.wantErr(s.Fence(h.ctx, order(7)), broker.ErrFenced, broker.CodeFencedToken)
	late := order(9)
	late.Deadline = time.Now().Add(-time.Second)
	h.wantErr(s.Fence(h.ctx, late), broker.ErrExpired, broker.CodeExpired)
	h.must(s.Fence(h.ctx, order(8)))
	if ps := h.positions(s, login); len(ps) != 0 {
		h.t.Fatalf("Fence opened positions: %+v", ps)
	}
}

func testTokens(h *harness) {
	const login = "acct-tokens"
	s := h.account(login, broker.Hedging)
	sym := h.symbol(s)
	h.must(h.env.Control.SetOptions(h.ctx, broker.ServerOptions{EnforceTokens: true}))
	openWith := func(token int64) (broker.OrderResult, error) {
		return s.Open(h.ctx, broker.OpenRequest{Order: order(token), Symbol: sym.Name, Side: broker.Buy, Volume: sym.MinLot})
	}
	first, err := openWith(5)
	h.must(err)
	_, err = openWith(4)
	h.wantErr(err, broker.ErrFenced, broker.CodeFencedToken)
	_, err = s.ClosePosition(h.ctx, broker.CloseRequest{Order: order(4), Ticket: first.Ticket})
	h.wantErr(err, broker.ErrFenced, broker.CodeFencedToken)
	_, err = s.Modify(h.ctx, broker.ModifyRequest{Order: order(4), Ticket: first.Ticket})
	h.wantErr(err, broker.ErrFenced, broker.CodeFencedToken)
	_, err = openWith(5)
	h.must(err)
	_, err = openWith(6)
	h.must(err)
	_, err = openWith(5)
	h.wantErr(err, broker.ErrFenced, broker.CodeFencedToken)
	if ps := h.positions(s, login); len(ps) != 3 {
		h.t.Fatalf("want the 3 accepted opens, got %+v", ps)
	}
	fenced := 0
	for _, e := range h.orderLog() {
		if e.Result == broker.CodeFencedToken {
			fenced++
			if e.Executed {
				h.t.Fatalf("log entry %+v is fenced and executed", e)
			}
		}
	}
	if fenced != 4 {
		h.t.Fatalf("order log shows %d fenced requests, want 4", fenced)
	}
}

func testDedup(h *harness) {
	const login = "acct-dedup"
	s := h.account(login, broker.Hedging)
	sym := h.symbol(s)
	h.must(h.env.Control.SetOptions(h.ctx, broker.ServerOptions{DedupRequests: true}))
	req := broker.OpenRequest{Order: order(1), Symbol: sym.Name, Side: broker.Buy, Volume: sym.MinLot}
	a, err := s.Open(h.ctx, req)
	h.must(err)
	b, err := s.Open(h.ctx, req)
	h.must(err)
	if a.Ticket != b.Ticket {
		h.t.Fatalf("the same request id opened tickets %d and %d", a.Ticket, b.Ticket)
	}
	if ps := h.positions(s, login); len(ps) != 1 {
		h.t.Fatalf("the same request id twice opened %+v", ps)
	}

	// A rejected request id keeps its first answer.
	bad := broker.OpenRequest{Order: order(1), Symbol: sym.Name, Side: broker.Buy, Volume: sym.MinLot / 2}
	_, err = s.Open(h.ctx, bad)
	h.wantErr(err, broker.ErrPermanent, broker.CodeInvalidVolume)
	_, err = s.Open(h.ctx, bad)
	h.wantErr(err, broker.ErrPermanent, broker.CodeInvalidVolume)

	creq := broker.CloseRequest{Order: order(1), Ticket: a.Ticket}
	_, err = s.ClosePosition(h.ctx, creq)
	h.must(err)
	_, err = s.ClosePosition(h.ctx, creq)
	h.must(err)

	log := h.orderLog()
	for _, id := range []uuid.UUID{req.RequestID, bad.RequestID, creq.RequestID} {
		es := logFor(log, id)
		if len(es) != 2 || es[0].Duplicate || !es[1].Duplicate || es[1].Executed {
			h.t.Fatalf("log entries of request %s: %+v, want a first one and a non-executed duplicate", id, es)
		}
	}
	if es := logFor(log, req.RequestID); !es[0].Executed || es[1].Ticket != a.Ticket {
		h.t.Fatalf("log entries of the open: %+v", es)
	}
}

func testOrderLog(h *harness) {
	const login = "acct-log"
	s := h.account(login, broker.Hedging)
	sym := h.symbol(s)
	c := h.env.Control

	ok := broker.OpenRequest{
		Order:  broker.Order{RequestID: uuid.New(), Token: 17, Node: "node-a"},
		Symbol: sym.Name, Side: broker.Sell, Volume: sym.MinLot, Magic: 99, Comment: "logged",
	}
	res, err := s.Open(h.ctx, ok)
	h.must(err)
	bad := broker.OpenRequest{
		Order:  broker.Order{RequestID: uuid.New(), Token: 18, Node: "node-b"},
		Symbol: sym.Name, Side: broker.Buy, Volume: sym.MinLot / 2,
	}
	_, err = s.Open(h.ctx, bad)
	h.wantErr(err, broker.ErrPermanent, broker.CodeInvalidVolume)
	closeReq := broker.CloseRequest{Order: broker.Order{RequestID: uuid.New(), Token: 19, Node: "node-c"}, Ticket: res.Ticket}
	_, err = s.ClosePosition(h.ctx, closeReq)
	h.must(err)
	mp, err := c.MasterOpen(h.ctx, login, broker.MasterOpenRequest{Symbol: sym.Name, Side: broker.Buy, Volume: sym.MinLot})
	h.must(err)

	log := h.orderLog()
	if len(log) != 4 {
		h.t.Fatalf("order log has %d entries, want 4: %+v", len(log), log)
	}
	for i, e := range log {
		if i > 0 && e.Seq != log[i-1].Seq+1 {
			h.t.Fatalf("order log Seq %d follows %d", e.Seq, log[i-1].Seq)
		}
		if e.Login != login || e.ServerTime.IsZero() {
			h.t.Fatalf("log entry %+v lacks login or server time", e)
		}
	}
	if e := log[0]; e.RequestID != ok.RequestID || e.Token != 17 || e.Node != "node-a" || e.Op != broker.OpOpen ||
		!e.Executed || e.Duplicate || e.Master || e.Ticket != res.Ticket || e.Symbol != sym.Name || e.Side != broker.Sell ||
		e.Magic != 99 || e.Comment != "logged" || e.Result != 0 || e.Error != "" {
		h.t.Fatalf("log entry of the open: %+v", e)
	}
	if e := log[1]; e.RequestID != bad.RequestID || e.Token != 18 || e.Node != "node-b" || e.Executed ||
		e.Result != broker.CodeInvalidVolume || e.Error == "" {
		h.t.Fatalf("log entry of the rejected open: %+v", e)
	}
	if e := log[2]; e.RequestID != closeReq.RequestID || e.Token != 19 || e.Node != "node-c" || e.Op != broker.OpClose ||
		!e.Executed || e.Ticket != res.Ticket {
		h.t.Fatalf("log entry of the close: %+v", e)
	}
	if e := log[3]; !e.Master || e.Node != "" || !e.Executed || e.Ticket != mp.Ticket || e.Op != broker.OpOpen {
		h.t.Fatalf("log entry of the master trade: %+v", e)
	}

	// Paging: after a Seq, at most limit entries.
	page, err := c.OrderLog(h.ctx, log[0].Seq, 2)
	h.must(err)
	if len(page) != 2 || page[0].Seq != log[1].Seq || page[1].Seq != log[2].Seq {
		h.t.Fatalf("OrderLog(after %d, limit 2) = %+v", log[0].Seq, page)
	}
	page, err = c.OrderLog(h.ctx, log[3].Seq, 0)
	h.must(err)
	if len(page) != 0 {
		h.t.Fatalf("OrderLog after the last entry = %+v", page)
	}
}
