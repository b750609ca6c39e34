package bridge_test

import (
	"strings"
	"testing"
	"time"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/broker/bridge"
)

func TestControlOverTheWire(t *testing.T) {
	s := newSim()
	ts := startServer(t, "127.0.0.1:0", s, s, bridge.ServerOptions{})
	c := dial(t, ts.addr, bridge.ClientOptions{})
	ctx := t.Context()

	spec := broker.AccountSpec{Login: "master", Password: "pw", Currency: "EUR", Balance: 50000, Leverage: 30,
		Mode: broker.Netting, SymbolSuffix: ".m"}
	if err := c.Provision(ctx, spec); err != nil {
		t.Fatalf("Provision: %v", err)
	}
	sess, err := c.Connect(ctx, broker.Credentials{Login: "master", Password: "pw"})
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	defer sess.Close()
	info, err := sess.Account(ctx)
	if err != nil || info.Currency != "EUR" || info.Balance != 50000 || info.Leverage != 30 || info.Mode != broker.Netting {
		t.Fatalf("Account = %+v, %v", info, err)
	}
	feed, err := sess.Subscribe(ctx)
	if err != nil {
		t.Fatalf("Subscribe: %v", err)
	}

	pos, err := c.MasterOpen(ctx, "master", broker.MasterOpenRequest{Symbol: "EURUSD.m", Side: broker.Sell, Volume: 0.1,
		SL: 2, TP: 0.5, Magic: 9, Comment: "manual"})
	if err != nil || pos.Ticket == 0 || pos.Side != broker.Sell || pos.Volume != 0.1 || pos.Symbol != "EURUSD.m" {
		t.Fatalf("MasterOpen = %+v, %v", pos, err)
	}
	if ev := recv(t, feed); ev.Kind != broker.Opened || ev.Position.Ticket != pos.Ticket {
		t.Fatalf("event = %+v", ev)
	}
	mod, err := c.MasterModify(ctx, "master", pos.Ticket, 1.9, 0.6)
	if err != nil || mod.SL != 1.9 || mod.TP != 0.6 {
		t.Fatalf("MasterModify = %+v, %v", mod, err)
	}
	if err := c.MasterClose(ctx, "master", pos.Ticket, 0.04); err != nil {
		t.Fatalf("MasterClose: %v", err)
	}
	ps, err := c.AccountPositions(ctx, "master")
	if err != nil || len(ps) != 1 || ps[0].Volume != 0.06 {
		t.Fatalf("AccountPositions = %+v, %v", ps, err)
	}
	if err := c.MasterClose(ctx, "master", pos.Ticket, 0); err != nil {
		t.Fatalf("MasterClose: %v", err)
	}
	for _, want := range []broker.EventKind{broker.Modified, broker.PartiallyClosed, broker.Closed} {
		if ev := recv(t, feed); ev.Kind != want {
			t.Fatalf("event = %+v, want %v", ev, want)
		}
	}
	_, err = c.AccountPositions(ctx, "nobody")
	wantClass(t, err, broker.ErrPermanent, broker.CodeInvalidRequest)

	log, err := c.OrderLog(ctx, 0, 0)
	if err != nil || len(log) != 4 {
		t.Fatalf("OrderLog = %+v, %v", log, err)
	}
	for i, e := range log {
		if e.Seq != int64(i+1) || !e.Master || !e.Executed || e.Login != "master" || e.ServerTime.IsZero() {
			t.Fatalf("log entry %d = %+v", i, e)
		}
	}
	if log[0].Op != broker.OpOpen || log[0].Comment != "manual" || log[0].Magic != 9 || log[1].Op != broker.OpModify || log[3].Op != broker.OpClose {
		t.Fatalf("log = %+v", log)
	}
	tail, err := c.OrderLog(ctx, 2, 1)
	if err != nil || len(tail) != 1 || tail[0].Seq != 3 {
		t.Fatalf("OrderLog(2, 1) = %+v, %v", tail, err)
	}

	// Faults: every order is requoted.
	if err := c.SetFaults(ctx, "master", broker.Faults{RequoteRate: 1}); err != nil {
		t.Fatalf("SetFaults: %v", err)
	}
	_, err = sess.Open(ctx, broker.OpenRequest{Order: order(), Symbol: "EURUSD.m", Side: broker.Buy, Volume: 0.01})
	wantClass(t, err, broker.ErrRetryable, broker.CodeRequote)
	err = c.SetFaults(ctx, "master", broker.Faults{RequoteRate: 2})
	wantClass(t, err, broker.ErrPermanent, broker.CodeInvalidRequest)
	if err := c.SetFaults(ctx, "master", broker.Faults{Latency: time.Millisecond}); err != nil {
		t.Fatalf("SetFaults: %v", err)
	}

	// Options: fencing tokens.
	if err := c.SetOptions(ctx, broker.ServerOptions{EnforceTokens: true, DedupRequests: true}); err != nil {
		t.Fatalf("SetOptions: %v", err)
	}
	high := broker.OpenRequest{Order: order(), Symbol: "EURUSD.m", Side: broker.Buy, Volume: 0.01}
	high.Token = 5
	first, err := sess.Open(ctx, high)
	if err != nil {
		t.Fatalf("Open with token 5: %v", err)
	}
	dup, err := sess.Open(ctx, high)
	if err != nil || dup.Ticket != first.Ticket {
		t.Fatalf("duplicate request = %+v, %v; want the first answer %+v", dup, err, first)
	}
	low := broker.OpenRequest{Order: order(), Symbol: "EURUSD.m", Side: broker.Buy, Volume: 0.01}
	low.Token = 4
	_, err = sess.Open(ctx, low)
	wantClass(t, err, broker.ErrFenced, broker.CodeFencedToken)
	log, err = c.OrderLog(ctx, 4, 0)
	if err != nil || len(log) != 4 || !log[2].Duplicate || log[3].Result != broker.CodeFencedToken || log[3].Token != 4 ||
		log[1].RequestID != high.RequestID || log[1].Node != "bridge-test" {
		t.Fatalf("order log tail = %+v, %v", log, err)
	}
}

func TestControlWithoutController(t *testing.T) {
	s := newSim()
	ts := startServer(t, "127.0.0.1:0", s, nil, bridge.ServerOptions{})
	c := dial(t, ts.addr, bridge.ClientOptions{})
	err := c.Provision(t.Context(), broker.AccountSpec{Login: "x"})
	wantClass(t, err, broker.ErrPermanent, broker.CodeInvalidRequest)
	if !strings.Contains(err.Error(), "no controller") {
		t.Fatalf("error %q does not say why", err)
	}
	// Trading still works.
	sess := connect(t, c, "x")
	if _, err := sess.Open(t.Context(), openReq(broker.Buy)); err != nil {
		t.Fatalf("Open: %v", err)
	}
}

func TestOrderLogPaging(t *testing.T) {
	s := newSim()
	ts := startServer(t, "127.0.0.1:0", s, s, bridge.ServerOptions{})
	// The whole paged fetch runs under one RequestTimeout; the default 10 s ran out on a
	// loaded machine under -race. This one is a limit for a hung bridge, not a speed claim.
	c := dial(t, ts.addr, bridge.ClientOptions{RequestTimeout: time.Minute})
	ctx := t.Context()
	if err := s.Provision(ctx, broker.AccountSpec{Login: "many", Balance: 1e9}); err != nil {
		t.Fatal(err)
	}
	const n = 12345 // more than two pages
	for range n {
		// Rejected (unknown symbol) but logged: a cheap way to grow the log.
		if _, err := s.MasterOpen(ctx, "many", broker.MasterOpenRequest{Symbol: "NOPE", Side: broker.Buy, Volume: 0.01}); err == nil {
			t.Fatal("MasterOpen of an unknown symbol succeeded")
		}
	}
	all, err := c.OrderLog(ctx, 0, 0)
	if err != nil || len(all) != n {
		t.Fatalf("OrderLog(0, 0): %d entries, %v", len(all), err)
	}
	for i, e := range all {
		if e.Seq != int64(i+1) {
			t.Fatalf("entry %d has Seq %d", i, e.Seq)
		}
	}
	some, err := c.OrderLog(ctx, 100, 6000)
	if err != nil || len(some) != 6000 || some[0].Seq != 101 || some[5999].Seq != 6100 {
		t.Fatalf("OrderLog(100, 6000): %d entries, %v", len(some), err)
	}
}
