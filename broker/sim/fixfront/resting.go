package fixfront

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/quickfixgo/quickfix"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/broker/fix/fixwire"
)

// Resting orders (strict mode): a standard FIX 4.4 client protects a position with a
// resting Stop order (40=3, StopPx) and a resting Limit order (40=2, Price) on the
// opposite side. The simulator behind is a MetaTrader-style server with position stops,
// so the front maps such an order onto the stops of the account's net position in the
// symbol: a stop is its SL, a limit its TP. Only what maps is accepted: an order on the
// opposite side of the position, for its whole quantity, one of each kind per position.
// When the server closes the position by its SL or TP, the front reports the fill of that
// order and cancels the other (one cancels the other). A resting order whose position was
// closed otherwise (a market order) stays until the client cancels it, and never trades.

// restingOrder is one resting stop or limit order of an account.
type restingOrder struct {
	clOrdID, orderID string
	symID            string
	side             broker.Side // the order's: opposite to the position's
	stop             bool        // a Stop order (the position's SL); else a Limit (its TP)
	px, units        float64
	ticket           int64 // the server position it protects
	tif              string
}

// restingBook holds an account's resting orders, by their current ClOrdID. Its lock is
// held across the server call that maps a change, so changes of one account are ordered.
type restingBook struct {
	mu     sync.Mutex
	orders map[string]*restingOrder
}

// restingOf returns the resting orders of an account.
func (f *Front) restingOf(login string) *restingBook {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.resting == nil {
		f.resting = map[string]*restingBook{}
	}
	b := f.resting[login]
	if b == nil {
		b = &restingBook{orders: map[string]*restingOrder{}}
		f.resting[login] = b
	}
	return b
}

// stopsLocked returns the SL and TP the resting orders of ticket give it, with o counted
// in place of the order named skip (o nil: without it).
func (b *restingBook) stopsLocked(ticket int64, skip string, o *restingOrder) (sl, tp float64) {
	for id, r := range b.orders {
		if r.ticket != ticket || id == skip {
			continue
		}
		if r.stop {
			sl = r.px
		} else {
			tp = r.px
		}
	}
	if o != nil {
		if o.stop {
			sl = o.px
		} else {
			tp = o.px
		}
	}
	return sl, tp
}

// kindOf names an order kind for texts.
func kindOf(stop bool) string {
	if stop {
		return "stop"
	}
	return "limit"
}

// netPosition returns the account's one position in symbol (nil when none).
func (s *fsession) netPosition(ctx context.Context, symbol string) (*broker.Position, error) {
	ps, err := s.sess.Positions(ctx)
	if err != nil {
		return nil, err
	}
	var out *broker.Position
	for i := range ps {
		if ps[i].Symbol != symbol {
			continue
		}
		if out != nil {
			return nil, broker.NewError(broker.ErrPermanent, broker.CodeInvalidRequest,
				"the account holds more than one position in %s: resting stop and limit orders need a netting account", symbol)
		}
		out = &ps[i]
	}
	return out, nil
}

// positionByTicket returns the account's position ticket (nil when it is closed).
func (s *fsession) positionByTicket(ctx context.Context, ticket int64) (*broker.Position, error) {
	ps, err := s.sess.Positions(ctx)
	if err != nil {
		return nil, err
	}
	for i := range ps {
		if ps[i].Ticket == ticket {
			return &ps[i], nil
		}
	}
	return nil, nil
}

func refused(format string, args ...any) error {
	return broker.NewError(broker.ErrPermanent, broker.CodeInvalidRequest, format, args...)
}

// readResting reads the fields of a resting order (D or G) that are checked per FIX 4.4:
// OrdType 3 with StopPx (99), or 2 with Price (44), a positive OrderQty, and a
// TimeInForce that lets it rest.
func readResting(m *quickfix.Message) (*restingOrder, error) {
	o := &restingOrder{symID: mustString(m, fixwire.TagSymbol), tif: mustString(m, fixwire.TagTimeInForce)}
	switch t := mustString(m, fixwire.TagOrdType); t {
	case fixwire.OrdTypeStop:
		o.stop, o.px = true, getFloat(m.Body, fixwire.TagStopPx)
		if !(o.px > 0) {
			return nil, refused("a stop order (40=3) needs a positive StopPx (99)")
		}
	case fixwire.OrdTypeLimit:
		o.px = getFloat(m.Body, fixwire.TagPrice)
		if !(o.px > 0) {
			return nil, refused("a limit order (40=2) needs a positive Price (44)")
		}
	default:
		return nil, refused("OrdType (40) %q: only market (1), limit (2) and stop (3) orders are supported", t)
	}
	switch o.tif {
	case "", tifDay, fixwire.TIFGoodTillCxl:
	default:
		return nil, refused("TimeInForce (59) %q: a resting stop or limit order must be DAY (0) or GTC (1)", o.tif)
	}
	side, ok := fixwire.ParseSide(mustString(m, fixwire.TagSide))
	if !ok {
		return nil, refused("Side (54) must be 1 or 2")
	}
	o.side = side
	o.units = getFloat(m.Body, fixwire.TagOrderQty)
	if !(o.units > 0) {
		return nil, refused("OrderQty (38) must be positive")
	}
	return o, nil
}

// tifDay is TimeInForce (59) DAY.
const tifDay = "0"

// sameUnits compares quantities in units (float noise aside).
func sameUnits(a, b float64) bool { return math.Abs(a-b) <= 1e-6*math.Max(1, math.Abs(b)) }

// newResting accepts a resting stop or limit order (NewOrderSingle 40=3 or 2) by mapping it
// onto the stops of the account's net position, and reports it New (39=0); what cannot be
// mapped is rejected (39=8) with the reason in Text.
func (s *fsession) newResting(m *quickfix.Message, clOrdID string, ord broker.Order) *quickfix.Message {
	ctx := context.Background()
	o, err := readResting(m)
	if err != nil {
		return s.reject(fixwire.MsgNewOrderSingle, m, clOrdID, fixwire.RejOther, err)
	}
	sp, ok, err := s.symbolByID(ctx, o.symID)
	if err == nil && !ok {
		return s.reject(fixwire.MsgNewOrderSingle, m, clOrdID, fixwire.RejUnknownSymbol, refused("unknown symbol id %q", o.symID))
	}
	if err != nil {
		return s.reject(fixwire.MsgNewOrderSingle, m, clOrdID, fixwire.RejReason(err), err)
	}
	book := s.f.restingOf(s.login)
	book.mu.Lock()
	defer book.mu.Unlock()
	pos, err := s.netPosition(ctx, sp.Name)
	switch {
	case err != nil:
	case pos == nil:
		err = refused("no position in %s to protect: a resting %s order is accepted only against the account's net position (opposite side, its whole quantity)", sp.Name, kindOf(o.stop))
	case pos.Side == o.side:
		err = refused("a resting %s order on the position's own side (%v) cannot be mapped: it must be on the opposite side", kindOf(o.stop), pos.Side)
	case !sameUnits(o.units, fixwire.ToUnits(pos.Volume, sp.ContractSize)):
		err = refused("OrderQty %s is not the position's quantity %s: a resting %s order must cover the whole net position",
			fixwire.FormatFloat(o.units), fixwire.FormatFloat(fixwire.ToUnits(pos.Volume, sp.ContractSize)), kindOf(o.stop))
	}
	if err == nil {
		for id, r := range book.orders {
			if r.ticket == pos.Ticket && r.stop == o.stop {
				err = refused("the position already has a resting %s order %s: replace it (G) or cancel it (F)", kindOf(o.stop), id)
			}
		}
	}
	if err == nil {
		o.ticket = pos.Ticket
		sl, tp := book.stopsLocked(pos.Ticket, "", o)
		_, err = s.sess.Modify(ctx, broker.ModifyRequest{Order: ord, Ticket: pos.Ticket, SL: sl, TP: tp})
	}
	if err != nil {
		r := s.reject(fixwire.MsgNewOrderSingle, m, clOrdID, fixwire.RejReason(err), err)
		s.afterError(err)
		return r
	}
	o.clOrdID, o.orderID = clOrdID, s.f.nextID("ro")
	book.orders[clOrdID] = o
	s.watchResting()
	r := s.restingReport(o, fixwire.ExecNew, fixwire.StatusNew)
	s.send(r)
	return r
}

// replaceResting replaces a resting order (OrderCancelReplaceRequest naming it by
// OrigClOrdID): its price, and its quantity (which must still be the position's). It
// reports Replaced (150=5, 39=5); an order it does not know is refused with an
// OrderCancelReject (102=1 unknown order).
func (s *fsession) replaceResting(m *quickfix.Message, clOrdID string, ord broker.Order) *quickfix.Message {
	ctx := context.Background()
	orig := mustString(m, fixwire.TagOrigClOrdID)
	book := s.f.restingOf(s.login)
	book.mu.Lock()
	defer book.mu.Unlock()
	old := book.orders[orig]
	if old == nil {
		return s.cancelReject(fixwire.MsgOrderCancelReplace, m, clOrdID, fixwire.CxlRejUnknownOrder, refused("unknown order %s: no resting order has that ClOrdID", orig))
	}
	o, err := readResting(m)
	if err == nil && o.stop != old.stop {
		err = refused("a resting %s order cannot be replaced by a %s order", kindOf(old.stop), kindOf(o.stop))
	}
	if err == nil && (o.side != old.side || o.symID != old.symID) {
		err = refused("a replace cannot change the order's side or symbol")
	}
	var pos *broker.Position
	if err == nil {
		pos, err = s.positionByTicket(ctx, old.ticket)
	}
	if err == nil && pos == nil {
		err = refused("the position order %s protected is closed", orig)
	}
	if err == nil {
		sp, _, _ := s.symbolByID(ctx, old.symID)
		if !sameUnits(o.units, fixwire.ToUnits(pos.Volume, sp.ContractSize)) {
			err = refused("OrderQty %s is not the position's quantity %s", fixwire.FormatFloat(o.units), fixwire.FormatFloat(fixwire.ToUnits(pos.Volume, sp.ContractSize)))
		}
	}
	if err == nil {
		o.ticket = old.ticket
		sl, tp := book.stopsLocked(old.ticket, orig, o)
		_, err = s.sess.Modify(ctx, broker.ModifyRequest{Order: ord, Ticket: old.ticket, SL: sl, TP: tp})
	}
	if err != nil {
		r := s.cancelReject(fixwire.MsgOrderCancelReplace, m, clOrdID, fixwire.CxlRejOther, err)
		s.afterError(err)
		return r
	}
	o.clOrdID, o.orderID = clOrdID, old.orderID
	delete(book.orders, orig)
	book.orders[clOrdID] = o
	s.watchResting() // a session that logged on since the order was placed watches it now
	r := s.restingReport(o, fixwire.ExecReplaced, fixwire.StatusReplaced)
	r.Body.SetString(fixwire.TagOrigClOrdID, orig)
	s.send(r)
	return r
}

// cancelResting cancels a resting order (OrderCancelRequest naming it by OrigClOrdID):
// the position loses that stop. It reports Canceled (150=4, 39=4); an order it does not
// know is refused with an OrderCancelReject (102=1 unknown order).
func (s *fsession) cancelResting(m *quickfix.Message, clOrdID string, ord broker.Order) *quickfix.Message {
	ctx := context.Background()
	orig := mustString(m, fixwire.TagOrigClOrdID)
	book := s.f.restingOf(s.login)
	book.mu.Lock()
	defer book.mu.Unlock()
	old := book.orders[orig]
	if old == nil {
		return s.cancelReject(fixwire.MsgOrderCancelRequest, m, clOrdID, fixwire.CxlRejUnknownOrder, refused("unknown order %s: no resting order has that ClOrdID", orig))
	}
	pos, err := s.positionByTicket(ctx, old.ticket)
	if err == nil && pos != nil {
		sl, tp := book.stopsLocked(old.ticket, orig, nil)
		_, err = s.sess.Modify(ctx, broker.ModifyRequest{Order: ord, Ticket: old.ticket, SL: sl, TP: tp})
	}
	if err != nil {
		r := s.cancelReject(fixwire.MsgOrderCancelRequest, m, clOrdID, fixwire.CxlRejOther, err)
		s.afterError(err)
		return r
	}
	delete(book.orders, orig)
	r := s.restingReport(old, fixwire.ExecCanceled, fixwire.StatusCanceled)
	r.Body.SetString(fixwire.TagClOrdID, clOrdID)
	r.Body.SetString(fixwire.TagOrigClOrdID, orig)
	r.Body.SetString(fixwire.TagLeavesQty, "0")
	s.send(r)
	return r
}

// restingReport is an ExecutionReport of a resting order (not sent).
func (s *fsession) restingReport(o *restingOrder, exec, status string) *quickfix.Message {
	r := newMsg(fixwire.MsgExecutionReport)
	r.Body.SetString(fixwire.TagClOrdID, o.clOrdID)
	r.Body.SetString(fixwire.TagOrderID, o.orderID)
	r.Body.SetString(fixwire.TagExecID, s.f.nextID("e"))
	r.Body.SetString(fixwire.TagExecType, exec)
	r.Body.SetString(fixwire.TagOrdStatus, status)
	r.Body.SetString(fixwire.TagSymbol, o.symID)
	r.Body.SetString(fixwire.TagSide, fixwire.SideString(o.side))
	if o.stop {
		r.Body.SetString(fixwire.TagOrdType, fixwire.OrdTypeStop)
		r.Body.SetString(fixwire.TagStopPx, fixwire.FormatFloat(o.px))
	} else {
		r.Body.SetString(fixwire.TagOrdType, fixwire.OrdTypeLimit)
		r.Body.SetString(fixwire.TagPrice, fixwire.FormatFloat(o.px))
	}
	if o.tif != "" {
		r.Body.SetString(fixwire.TagTimeInForce, o.tif)
	}
	r.Body.SetString(fixwire.TagOrderQty, fixwire.FormatFloat(o.units))
	r.Body.SetString(fixwire.TagLeavesQty, fixwire.FormatFloat(o.units))
	r.Body.SetString(fixwire.TagCumQty, "0")
	r.Body.SetString(fixwire.TagAvgPx, "0")
	r.Body.SetString(fixwire.TagTransactTime, fixwire.FormatTime(time.Now()))
	return r
}

// restingFeed is the key of the session's server feed that watches resting orders.
const restingFeed = "\x00resting"

// watchResting subscribes the session, once, to the server's events of the account: a
// position the server closes by its SL or TP fills the resting order mapped there.
func (s *fsession) watchResting() {
	s.mu.Lock()
	if s.done || s.feeds[restingFeed] != nil {
		s.mu.Unlock()
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.feeds[restingFeed] = cancel
	s.mu.Unlock()
	ch, err := s.sess.Subscribe(ctx)
	if err != nil {
		s.f.log.Warn().Err(err).Str("login", s.login).Msg("fix: resting orders not watched")
		s.mu.Lock()
		if s.feeds != nil {
			delete(s.feeds, restingFeed)
		}
		s.mu.Unlock()
		cancel()
		return
	}
	go func() {
		for ev := range ch {
			if ev.Kind == broker.Closed && (ev.Position.Comment == "[sl]" || ev.Position.Comment == "[tp]") {
				s.stopFilled(ev)
			}
		}
		s.mu.Lock()
		if s.feeds != nil {
			delete(s.feeds, restingFeed)
		}
		s.mu.Unlock()
	}()
}

// stopFilled reports the fill of the resting order whose stop closed a position, and the
// cancel of the position's other resting order.
func (s *fsession) stopFilled(ev broker.Event) {
	stop := ev.Position.Comment == "[sl]"
	book := s.f.restingOf(s.login)
	book.mu.Lock()
	var filled, other *restingOrder
	for id, r := range book.orders {
		if r.ticket != ev.Position.Ticket {
			continue
		}
		if r.stop == stop {
			filled = r
		} else {
			other = r
		}
		delete(book.orders, id)
	}
	book.mu.Unlock()
	if filled == nil {
		return
	}
	// The reports go to a logged-on session of the account: this one, else another (this
	// one may be ending while its feed drains). With none, they are lost.
	to := s
	s.mu.Lock()
	done := s.done
	s.mu.Unlock()
	if done {
		to = nil
		for _, o := range s.f.sessionsOf(s.login) {
			to = o
		}
		if to == nil {
			s.f.log.Warn().Str("login", s.login).Str("clordid", filled.clOrdID).Msg("fix: resting order filled while no session is logged on; not reported")
			return
		}
	}
	sp, _, _ := s.symbolByID(context.Background(), filled.symID)
	units := fixwire.ToUnits(ev.Position.Volume, sp.ContractSize)
	if !(units > 0) {
		units = filled.units
	}
	r := s.restingReport(filled, fixwire.ExecTrade, fixwire.StatusFilled)
	r.Body.SetString(fixwire.TagLastQty, fixwire.FormatFloat(units))
	r.Body.SetString(fixwire.TagCumQty, fixwire.FormatFloat(units))
	r.Body.SetString(fixwire.TagLeavesQty, "0")
	r.Body.SetString(fixwire.TagLastPx, fixwire.FormatFloat(filled.px))
	r.Body.SetString(fixwire.TagAvgPx, fixwire.FormatFloat(filled.px))
	r.Body.SetString(fixwire.TagTransactTime, fixwire.FormatTime(ev.ServerTime))
	to.send(r)
	if other != nil {
		c := s.restingReport(other, fixwire.ExecCanceled, fixwire.StatusCanceled)
		c.Body.SetString(fixwire.TagLeavesQty, "0")
		c.Body.SetString(fixwire.TagText, fmt.Sprintf("cancelled: the position closed by its %s order %s", kindOf(stop), filled.clOrdID))
		to.send(c)
	}
}

// cancelReject sends and returns an OrderCancelReject (9) of a replace (G) or cancel (F):
// CxlRejReason (102) reason, the error in Text.
func (s *fsession) cancelReject(mt string, m *quickfix.Message, clOrdID, reason string, err error) *quickfix.Message {
	r := newMsg(fixwire.MsgOrderCancelReject)
	r.Body.SetString(fixwire.TagOrderID, "NONE")
	r.Body.SetString(fixwire.TagClOrdID, clOrdID)
	r.Body.SetString(fixwire.TagOrigClOrdID, mustString(m, fixwire.TagOrigClOrdID))
	r.Body.SetString(fixwire.TagOrdStatus, fixwire.StatusRejected)
	if mt == fixwire.MsgOrderCancelRequest {
		r.Body.SetString(fixwire.TagCxlRejRespTo, fixwire.CxlRejToCancel)
	} else {
		r.Body.SetString(fixwire.TagCxlRejRespTo, fixwire.CxlRejToReplace)
	}
	r.Body.SetString(fixwire.TagCxlRejReason, reason)
	s.setError(&r.Body, err)
	s.send(r)
	return r
}
