package fix_test

import (
	"bytes"
	"context"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/quickfixgo/quickfix"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/broker/fix"
	"github.com/snapcopier/copier/broker/fix/fixwire"
	"github.com/snapcopier/copier/broker/sim"
	"github.com/snapcopier/copier/broker/sim/fixfront"
)

// Every message the fix44 dialect sends passes the stock FIX 4.4 dictionary (quickfixgo's
// FIX44.xml, as a strict venue validates it): the Logon, NewOrderSingle (an open and a
// close; a Stop (40=3) and a Limit (40=2) protective order), OrderCancelReplaceRequest and
// OrderCancelRequest (of protective orders), OrderStatusRequest (after a lost reply),
// RequestForPositions (snapshot and subscription) and CollateralInquiry, each as written
// on the wire. The venue is the simulator's front in its own dialect, so that every call
// is answered, and for the protective orders its strict mode, which accepts them; the
// client knows the symbols from its configured list.
func TestFIX44MessagesPassTheStockDictionary(t *testing.T) {
	srv := sim.New(sim.Config{Seed: 1, AutoProvision: true})
	f, err := fixfront.Start("127.0.0.1:0", srv, srv, fixfront.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	b, err := fix.New(fix.Config{Addr: f.Addr(), Dialect: fixwire.DialectFIX44, Symbols: simSymbols(t, srv), ReplyTimeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var sent []string
	fix.SetWire(b, func(raw string) {
		mu.Lock()
		sent = append(sent, raw)
		mu.Unlock()
	})
	bs, err := b.Connect(ctx, broker.Credentials{Login: "std", Password: "pw"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bs.Close() })
	syms, err := bs.Symbols(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sym := syms[0]
	order := func() broker.Order {
		return broker.Order{RequestID: uuid.New(), Token: 3, Node: "n1", Deadline: time.Now().Add(time.Minute)}
	}
	res, err := bs.Open(ctx, broker.OpenRequest{Order: order(), Symbol: sym.Name, Side: broker.Buy, Volume: 2 * sym.MinLot, Comment: "copy-marker"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bs.Account(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := bs.ClosePosition(ctx, broker.CloseRequest{Order: order(), Ticket: res.Ticket, Volume: sym.MinLot}); err != nil {
		t.Fatal(err)
	}
	sctx, stop := context.WithCancel(ctx)
	if _, err := bs.Subscribe(sctx); err != nil {
		t.Fatal(err)
	}
	stop()
	// A lost reply: the client asks for the order's status.
	if err := srv.SetFaults(ctx, "std", broker.Faults{TimeoutRate: 1}); err != nil {
		t.Fatal(err)
	}
	_, _ = bs.Open(ctx, broker.OpenRequest{Order: order(), Symbol: sym.Name, Side: broker.Sell, Volume: sym.MinLot})

	// Protective orders, against a strict venue that accepts them: an open with stops (a
	// Stop and a Limit order), a Modify that replaces the stop (G) and cancels the limit
	// (F), a close that cancels the stop (F).
	nsrv := sim.New(sim.Config{Seed: 1, AutoProvision: true, DefaultAccount: broker.AccountSpec{Currency: "USD", Balance: 1e6, Leverage: 100, Mode: broker.Netting}})
	nf, err := fixfront.Start("127.0.0.1:0", nsrv, nsrv, fixfront.Options{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nf.Close() })
	nb, err := fix.New(fix.Config{Addr: nf.Addr(), Dialect: fixwire.DialectFIX44, Symbols: simSymbols(t, nsrv)})
	if err != nil {
		t.Fatal(err)
	}
	fix.SetWire(nb, func(raw string) {
		mu.Lock()
		sent = append(sent, raw)
		mu.Unlock()
	})
	// Another login: two fronts in one process number their dynamic sessions alike.
	ns, err := nb.Connect(ctx, broker.Credentials{Login: "std2", Password: "pw"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ns.Close() })
	px := func(f float64) float64 { return math.Round(sym.Bid*f/sym.Point) * sym.Point }
	pres, err := ns.Open(ctx, broker.OpenRequest{Order: order(), Symbol: sym.Name, Side: broker.Buy, Volume: sym.MinLot, SL: px(0.9), TP: px(1.1)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ns.Modify(ctx, broker.ModifyRequest{Order: order(), Ticket: pres.Ticket, SL: px(0.92)}); err != nil {
		t.Fatal(err)
	}
	if _, err := ns.ClosePosition(ctx, broker.CloseRequest{Order: order(), Ticket: pres.Ticket}); err != nil {
		t.Fatal(err)
	}

	mu.Lock()
	defer mu.Unlock()
	seen := map[string]bool{}
	for _, raw := range sent {
		m := quickfix.NewMessage()
		if err := quickfix.ParseMessage(m, bytes.NewBufferString(raw)); err != nil {
			t.Fatalf("unparsable message %q: %v", raw, err)
		}
		mt, _ := m.MsgType()
		seen[mt] = true
		if mt == fixwire.MsgNewOrderSingle {
			ot, _ := m.Body.GetString(fixwire.TagOrdType)
			seen[mt+"/40="+ot] = true
		}
		if rej := fixwire.ValidateStock(m); rej != nil {
			t.Errorf("%s fails the stock FIX 4.4 dictionary: %v (tag %v)\n%s", fixwire.MsgTypeName(mt), rej, rej.RefTagID(), bytes.ReplaceAll([]byte(raw), []byte{1}, []byte{'|'}))
		}
		for tg := quickfix.Tag(5000); tg < 10000; tg++ {
			if m.Body.Has(tg) || m.Header.Has(tg) {
				t.Errorf("%s carries the custom tag %d", fixwire.MsgTypeName(mt), tg)
			}
		}
	}
	for _, mt := range []string{fixwire.MsgLogon, fixwire.MsgNewOrderSingle, fixwire.MsgOrderStatusRequest, fixwire.MsgRequestForPositions, fixwire.MsgCollateralInquiry,
		fixwire.MsgOrderCancelReplace, fixwire.MsgOrderCancelRequest} {
		if !seen[mt] {
			t.Errorf("no %s was sent", fixwire.MsgTypeName(mt))
		}
	}
	for _, ot := range []string{fixwire.OrdTypeMarket, fixwire.OrdTypeLimit, fixwire.OrdTypeStop} {
		if !seen[fixwire.MsgNewOrderSingle+"/40="+ot] {
			t.Errorf("no NewOrderSingle with OrdType (40) %s was sent", ot)
		}
	}
	if seen[fixwire.MsgSecurityListRequest] {
		t.Error("the fix44 dialect sent a SecurityListRequest")
	}
}
