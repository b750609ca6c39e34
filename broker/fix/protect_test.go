package fix_test

import (
	"bytes"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quickfixgo/quickfix"
	"github.com/rs/zerolog"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/broker/fix"
	"github.com/snapcopier/copier/broker/fix/fixwire"
	"github.com/snapcopier/copier/broker/sim"
	"github.com/snapcopier/copier/broker/sim/fixfront"
	"github.com/snapcopier/copier/internal/testwait"
)

// wireLog keeps the messages a client writes, parsed.
type wireLog struct {
	mu   sync.Mutex
	msgs []*quickfix.Message
}

func (w *wireLog) add(raw string) {
	m := quickfix.NewMessage()
	if err := quickfix.ParseMessage(m, bytes.NewBufferString(raw)); err != nil {
		return
	}
	w.mu.Lock()
	w.msgs = append(w.msgs, m)
	w.mu.Unlock()
}

// of returns the messages of type mt written since mark, and the new mark.
func (w *wireLog) of(mt string, mark int) ([]*quickfix.Message, int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []*quickfix.Message
	for _, m := range w.msgs[mark:] {
		if t, _ := m.MsgType(); t == mt {
			out = append(out, m)
		}
	}
	return out, len(w.msgs)
}

func (w *wireLog) mark() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.msgs)
}

func field(m *quickfix.Message, t quickfix.Tag) string {
	v, _ := m.Body.GetString(t)
	return v
}

// logBuffer is a zerolog sink the test reads.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// In fix44 a position's stops are resting orders at a standard venue (the strict front):
// an open with SL and TP places a Stop and a Limit order for the filled quantity on the
// opposite side; Modify replaces one (G), cancels one (F) and places one anew; the price
// falling through the SL makes the venue fill the stop, which closes the position in the
// book and ends the take-profit; a close cancels the position's protective orders; a stop
// the venue refuses leaves the position open without it, and the Modify that asks for it
// again gets the venue's refusal, classified.
func TestFIX44ProtectiveOrders(t *testing.T) {
	s := sim.New(sim.Config{Seed: 1, AutoProvision: true, TriggerStops: true,
		DefaultAccount: broker.AccountSpec{Currency: "USD", Balance: 1e6, Leverage: 100, Mode: broker.Netting}})
	var wire wireLog
	logs := &logBuffer{}
	cfg := fix.Config{Dialect: fixwire.DialectFIX44, Symbols: simSymbols(t, s), Book: fix.NewMemBook(), Log: zerolog.New(logs)}
	e := newEnvFor(t, s, envOptions{front: fixfront.Options{Strict: true}, client: cfg, wire: wire.add})
	var reports testwait.Log[string]
	fix.SetReported(e.broker, func(_, id string) { reports.Add(id) })
	sess := connect(t, e, "prot")
	sym := firstSymbol(t, sess)
	ctx := t.Context()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	round := func(p float64) float64 { return math.Round(p/sym.Point) * sym.Point }
	position := func(ticket int64) (broker.Position, broker.Position) {
		t.Helper()
		ps, err := sess.Positions(ctx)
		must(err)
		vs, err := s.AccountPositions(ctx, "prot")
		must(err)
		if len(ps) != 1 || ps[0].Ticket != ticket || len(vs) != 1 {
			t.Fatalf("book %+v, venue %+v: want one position, ticket %d", ps, vs, ticket)
		}
		return ps[0], vs[0]
	}
	stops := func(what string, ticket int64, sl, tp float64) {
		t.Helper()
		p, v := position(ticket)
		if !near(p.SL, sl) || !near(p.TP, tp) || !near(v.SL, sl) || !near(v.TP, tp) {
			t.Fatalf("%s: book SL/TP %v/%v, venue %v/%v, want %v/%v", what, p.SL, p.TP, v.SL, v.TP, sl, tp)
		}
	}
	units := fixwire.FormatFloat(fixwire.ToUnits(2*sym.MinLot, sym.ContractSize))

	// Open with both stops.
	bid := sym.Bid
	sl, tp := round(bid*0.95), round(bid*1.05)
	mark := wire.mark()
	res, err := sess.Open(ctx, broker.OpenRequest{Order: order(), Symbol: sym.Name, Side: broker.Buy, Volume: 2 * sym.MinLot, SL: sl, TP: tp, Comment: "mc1"})
	must(err)
	stops("after the open", res.Ticket, sl, tp)
	ds, _ := wire.of(fixwire.MsgNewOrderSingle, mark)
	if len(ds) != 3 {
		t.Fatalf("%d NewOrderSingles for an open with stops, want the market order and two protective orders", len(ds))
	}
	for i, want := range []struct {
		ordType string
		px      quickfix.Tag
		price   float64
	}{{fixwire.OrdTypeStop, fixwire.TagStopPx, sl}, {fixwire.OrdTypeLimit, fixwire.TagPrice, tp}} {
		d := ds[i+1]
		px, _ := fixwire.ParseFloat(field(d, want.px))
		if field(d, fixwire.TagOrdType) != want.ordType || !near(px, want.price) || field(d, fixwire.TagSide) != fixwire.SideSell ||
			field(d, fixwire.TagTimeInForce) != fixwire.TIFGoodTillCxl || field(d, fixwire.TagOrderQty) != units ||
			!strings.HasPrefix(field(d, fixwire.TagClOrdID), field(ds[0], fixwire.TagClOrdID)+".") {
			t.Errorf("protective order %d: %s", i, d)
		}
	}

	// Modify: move the SL (a replace), drop the TP (a cancel), then add it back (a new order).
	sl2 := round(bid * 0.97)
	mark = wire.mark()
	_, err = sess.Modify(ctx, broker.ModifyRequest{Order: order(), Ticket: res.Ticket, SL: sl2})
	must(err)
	stops("after moving the SL and dropping the TP", res.Ticket, sl2, 0)
	gs, _ := wire.of(fixwire.MsgOrderCancelReplace, mark)
	fs, _ := wire.of(fixwire.MsgOrderCancelRequest, mark)
	if len(gs) != 1 || field(gs[0], fixwire.TagOrigClOrdID) != field(ds[1], fixwire.TagClOrdID) || len(fs) != 1 || field(fs[0], fixwire.TagOrigClOrdID) != field(ds[2], fixwire.TagClOrdID) {
		t.Fatalf("modify sent %d replaces and %d cancels: %v %v", len(gs), len(fs), gs, fs)
	}
	_, err = sess.Modify(ctx, broker.ModifyRequest{Order: order(), Ticket: res.Ticket, SL: sl2, TP: tp})
	must(err)
	stops("after adding the TP back", res.Ticket, sl2, tp)

	// Another node takes the account over (same venue, same book): it finds the protective
	// orders by the ids the book keeps and replaces the stop, and the venue's reports now
	// reach it.
	must(sess.Close())
	cfg.Addr = e.front.Addr()
	b2, err := fix.New(cfg)
	must(err)
	fix.SetWire(b2, wire.add)
	fix.SetReported(b2, func(_, id string) { reports.Add(id) })
	sess, err = b2.Connect(ctx, broker.Credentials{Login: "prot", Password: "pw"})
	must(err)
	t.Cleanup(func() { _ = sess.Close() })
	before, _ := wire.of(fixwire.MsgOrderCancelReplace, 0)
	sl2 = round(bid * 0.96)
	mark = wire.mark()
	_, err = sess.Modify(ctx, broker.ModifyRequest{Order: order(), Ticket: res.Ticket, SL: sl2, TP: tp})
	must(err)
	stops("after the new owner moved the SL", res.Ticket, sl2, tp)
	if gs, _ := wire.of(fixwire.MsgOrderCancelReplace, mark); len(gs) != 1 || field(gs[0], fixwire.TagOrigClOrdID) != field(before[len(before)-1], fixwire.TagClOrdID) {
		t.Fatalf("the new owner's modify sent %v, want a replace of the stop the first node placed", gs)
	}

	// The price falls through the SL: the venue fills the stop and cancels the limit; the
	// book closes the position.
	s.SetPrice(sym.Name, round(sl2*0.99))
	if n := s.CheckStops(); n != 1 {
		t.Fatalf("the price below the SL closed %d positions, want 1", n)
	}
	// Two venue reports: the stop's fill and the limit's cancel.
	reports.Await(t, "the stop's fill and the limit's cancel", 0, limit, func(ids []string) (bool, string) {
		return len(ids) == 2, strings.Join(ids, " ")
	})
	if ps, err := sess.Positions(ctx); err != nil || len(ps) != 0 {
		t.Fatalf("book after the stop filled: %+v (%v), want nothing open", ps, err)
	}
	if vs, err := s.AccountPositions(ctx, "prot"); err != nil || len(vs) != 0 {
		t.Fatalf("venue after the stop: %+v (%v)", vs, err)
	}

	// A partial close replaces the position's protective orders for what is left; a close
	// cancels them.
	bid = round(sl2 * 0.99)
	res, err = sess.Open(ctx, broker.OpenRequest{Order: order(), Symbol: sym.Name, Side: broker.Buy, Volume: 2 * sym.MinLot, SL: round(bid * 0.95), TP: round(bid * 1.05)})
	must(err)
	stops("second open", res.Ticket, round(bid*0.95), round(bid*1.05))
	mark = wire.mark()
	_, err = sess.ClosePosition(ctx, broker.CloseRequest{Order: order(), Ticket: res.Ticket, Volume: sym.MinLot})
	must(err)
	left := fixwire.FormatFloat(fixwire.ToUnits(sym.MinLot, sym.ContractSize))
	if gs, _ := wire.of(fixwire.MsgOrderCancelReplace, mark); len(gs) != 2 || field(gs[0], fixwire.TagOrderQty) != left || field(gs[1], fixwire.TagOrderQty) != left {
		t.Fatalf("a partial close sent %v, want the stop and the limit replaced for %s", gs, left)
	}
	stops("after the partial close", res.Ticket, round(bid*0.95), round(bid*1.05))
	mark = wire.mark()
	_, err = sess.ClosePosition(ctx, broker.CloseRequest{Order: order(), Ticket: res.Ticket})
	must(err)
	if fs, _ := wire.of(fixwire.MsgOrderCancelRequest, mark); len(fs) != 2 {
		t.Fatalf("a close sent %d cancels, want the stop's and the limit's", len(fs))
	}
	if ps, err := sess.Positions(ctx); err != nil || len(ps) != 0 {
		t.Fatalf("book after the close: %+v (%v)", ps, err)
	}

	// A stop on the wrong side of the price: the venue refuses it, the position opens
	// without it (logged), and the Modify that asks for it again is refused, classified.
	if strings.Contains(logs.String(), `"level":"error"`) {
		t.Fatalf("errors before the refusal case: %s", logs.String())
	}
	bad := round(bid * 1.5)
	res, err = sess.Open(ctx, broker.OpenRequest{Order: order(), Symbol: sym.Name, Side: broker.Buy, Volume: 2 * sym.MinLot, SL: bad})
	must(err)
	stops("an open whose SL was refused", res.Ticket, 0, 0)
	if !strings.Contains(logs.String(), "protective order refused") {
		t.Fatalf("the refused stop was not logged: %s", logs.String())
	}
	_, err = sess.Modify(ctx, broker.ModifyRequest{Order: order(), Ticket: res.Ticket, SL: bad})
	wantClass(t, err, broker.ErrPermanent)
	if !strings.Contains(err.Error(), "stop") {
		t.Fatalf("modify refused with %v, want the venue's reason", err)
	}
	stops("after the refused modify", res.Ticket, 0, 0)
}

// The strict front refuses, with a rejected ExecutionReport naming why, a resting order it
// cannot map onto the account's net position; cancels unfilled an immediate-or-cancel
// limit the market is beyond (a marketable limit, not a resting order); and refuses a replace or cancel of an order
// it does not know with an OrderCancelReject (102=1).
func TestStrictFrontRefusesUnmappableRestingOrders(t *testing.T) {
	s := sim.New(sim.Config{Seed: 1, AutoProvision: true,
		DefaultAccount: broker.AccountSpec{Currency: "USD", Balance: 1e6, Leverage: 100, Mode: broker.Netting}})
	e := newEnvFor(t, s, envOptions{front: fixfront.Options{Strict: true}})
	rc := dialRaw(t, e.front.Addr())
	rc.send("FIX.4.4", "A", "98=0", "108=30", "141=Y", "553=raw", "554=pw")
	if m := rc.read(); !strings.Contains(m, "35=A\x01") {
		t.Fatalf("logon answered %q", m)
	}
	now := "60=" + time.Now().UTC().Format("20060102-15:04:05")
	expect := func(what, m string, want ...string) {
		t.Helper()
		for _, w := range want {
			if !strings.Contains(m, w) {
				t.Fatalf("%s answered %q, want %q", what, strings.ReplaceAll(m, "\x01", "|"), w)
			}
		}
	}
	rc.send("FIX.4.4", "D", "11=s1", "55=1", "54=2", "38=1000", "40=3", "99=0.5", "59=1", now)
	expect("a stop without a position", rc.read(), "35=8\x01", "39=8\x01", "no position")
	rc.send("FIX.4.4", "D", "11=m1", "55=1", "54=1", "38=1000", "40=1", "59=3", now)
	expect("a market buy", rc.read(), "39=2\x01")
	rc.send("FIX.4.4", "D", "11=s2", "55=1", "54=1", "38=1000", "40=3", "99=0.5", "59=1", now)
	expect("a stop on the position's side", rc.read(), "39=8\x01", "own side")
	rc.send("FIX.4.4", "D", "11=s3", "55=1", "54=2", "38=2000", "40=3", "99=0.5", "59=1", now)
	expect("a stop for another quantity", rc.read(), "39=8\x01", "not the position's quantity")
	rc.send("FIX.4.4", "D", "11=s4", "55=1", "54=2", "38=1000", "40=3", "59=1", now)
	expect("a stop without StopPx", rc.read(), "39=8\x01", "StopPx")
	rc.send("FIX.4.4", "D", "11=s5", "55=1", "54=2", "38=1000", "40=2", "44=5", "59=3", now)
	expect("an IOC limit beyond the market (a marketable limit, not a resting order)", rc.read(), "35=8\x01", "150=4\x01", "39=4\x01", "14=0\x01", "not filled within the limit")
	rc.send("FIX.4.4", "D", "11=s6", "55=1", "54=2", "38=1000", "40=2", "59=3", now)
	expect("an IOC limit without Price", rc.read(), "39=8\x01", "Price (44)")
	rc.send("FIX.4.4", "D", "11=s7", "55=1", "54=2", "38=1000", "40=2", "44=0.5", "59=4", now)
	expect("a fill-or-kill limit", rc.read(), "39=8\x01", "TimeInForce")
	rc.send("FIX.4.4", "G", "11=g1", "41=nope", "55=1", "54=2", "38=1000", "40=3", "99=0.5", "59=1", now)
	expect("a replace of an unknown order", rc.read(), "35=9\x01", "102=1\x01", "434=2\x01")
	rc.send("FIX.4.4", "F", "11=f1", "41=nope", "55=1", "54=2", "38=1000", now)
	expect("a cancel of an unknown order", rc.read(), "35=9\x01", "102=1\x01", "434=1\x01")
}

// The non-strict (ctrader) front still takes market orders only and does not know
// OrderCancelRequest.
func TestCTraderFrontKeepsMarketOrdersOnly(t *testing.T) {
	e := newEnv(t, envOptions{})
	rc := dialRaw(t, e.front.Addr())
	rc.send("FIX.4.4", "A", "98=0", "108=30", "141=Y", "553=raw", "554=pw")
	if m := rc.read(); !strings.Contains(m, "35=A\x01") {
		t.Fatalf("logon answered %q", m)
	}
	now := "60=" + time.Now().UTC().Format("20060102-15:04:05")
	rc.send("FIX.4.4", "D", "11=s1", "55=1", "54=2", "38=1000", "40=3", "99=0.5", "59=1", now)
	if m := rc.read(); !strings.Contains(m, "39=8\x01") || !strings.Contains(m, "only market orders") {
		t.Fatalf("a stop order answered %q", m)
	}
	rc.send("FIX.4.4", "F", "11=f1", "41=nope", "55=1", "54=2", "38=1000", now)
	if m := rc.read(); !strings.Contains(m, "35=j\x01") && !strings.Contains(m, "35=3\x01") {
		t.Fatalf("a cancel answered %q, want it refused as unsupported", m)
	}
}
