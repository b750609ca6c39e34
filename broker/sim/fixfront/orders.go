package fixfront

import (
	"context"
	"errors"
	"strconv"
	"sync"

	"github.com/google/uuid"
	"github.com/quickfixgo/quickfix"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/broker/fix/fixwire"
)

// memoLimit is how many ClOrdIDs per account the front remembers.
const memoLimit = 10000

// accountMemo remembers the account's recent ClOrdIDs and what became of them, across
// sessions: the venue's duplicate check and its answer to a PossResend.
type accountMemo struct {
	mu     sync.Mutex
	orders map[string]*orderEntry
	ring   []string
	next   int
}

// orderEntry is one ClOrdID. done closes when its processing ended; reply is the report
// sent, or nil when the reply was lost (the server timed out: outcome unknown to the
// client, known to the venue through its order log).
type orderEntry struct {
	done  chan struct{}
	reply *quickfix.Message
	reqID uuid.UUID
}

// put remembers a new entry for clOrdID, forgetting the oldest when full.
func (m *accountMemo) putLocked(clOrdID string, e *orderEntry) {
	if _, ok := m.orders[clOrdID]; !ok {
		if len(m.ring) < memoLimit {
			m.ring = append(m.ring, clOrdID)
		} else {
			delete(m.orders, m.ring[m.next])
			m.ring[m.next] = clOrdID
			m.next = (m.next + 1) % memoLimit
		}
	}
	m.orders[clOrdID] = e
}

// order processes a NewOrderSingle or OrderCancelReplaceRequest: the ClOrdID check, then
// the server call, then the report.
func (s *fsession) order(mt string, m *quickfix.Message) {
	clOrdID, _ := m.Body.GetString(fixwire.TagClOrdID)
	if clOrdID == "" {
		s.businessReject(mt, "", broker.NewError(broker.ErrPermanent, broker.CodeInvalidRequest, "ClOrdID (11) is required"))
		return
	}
	possResend, _ := m.Header.GetBool(fixwire.TagPossResend) // a header field
	memo := s.f.memo(s.login)
	e := &orderEntry{done: make(chan struct{}), reqID: requestID(clOrdID)}
	memo.mu.Lock()
	prev := memo.orders[clOrdID]
	if prev != nil && !possResend {
		memo.mu.Unlock()
		s.reject(mt, m, clOrdID, fixwire.RejDuplicate,
			broker.NewError(broker.ErrPermanent, broker.CodeInvalidRequest, "duplicate ClOrdID %s (a resend must set PossResend)", clOrdID))
		return
	}
	if prev == nil {
		memo.putLocked(clOrdID, e)
		memo.mu.Unlock()
		s.process(mt, m, clOrdID, e)
		return
	}
	memo.mu.Unlock()

	// A resend of a known order: report its status rather than trade it again.
	<-prev.done
	if !s.f.dedups() {
		if reply := memo.reply(prev); reply != nil {
			s.sendStatus(reply)
			return
		}
		if st := s.resolve(m, clOrdID, prev.reqID); st != nil {
			memo.setReply(prev, st)
			s.sendStatus(st)
			return
		}
	}
	// Never executed (or the server de-duplicates itself): process it now.
	memo.mu.Lock()
	memo.putLocked(clOrdID, e)
	memo.mu.Unlock()
	s.process(mt, m, clOrdID, e)
}

// sendStatus answers a PossResend with the order's report as an order status.
func (s *fsession) sendStatus(reply *quickfix.Message) {
	r := quickfix.NewMessage()
	reply.CopyInto(r)
	mt, _ := r.MsgType()
	if mt == fixwire.MsgExecutionReport {
		r.Body.SetString(fixwire.TagExecType, fixwire.ExecOrderStatus)
		r.Body.SetString(fixwire.TagExecID, s.f.nextID("st"))
	}
	r.Header.SetBool(fixwire.TagPossResend, true)
	s.send(r)
}

// resolve finds out, from the server's order log, whether an order whose reply was lost
// executed; it returns the report to send, or nil when it did not execute.
func (s *fsession) resolve(m *quickfix.Message, clOrdID string, id uuid.UUID) *quickfix.Message {
	ctx := context.Background()
	log, err := s.f.ctl.OrderLog(ctx, 0, 0)
	if err != nil {
		return nil
	}
	for i := len(log) - 1; i >= 0; i-- {
		e := log[i]
		if e.RequestID != id || e.Login != s.login {
			continue
		}
		if !e.Executed {
			return nil
		}
		res := broker.OrderResult{Ticket: e.Ticket, Volume: e.Volume, ServerTime: e.ServerTime}
		if e.Op == broker.OpOpen {
			if ps, err := s.sess.Positions(ctx); err == nil {
				for _, p := range ps {
					if p.Ticket == e.Ticket {
						res.Price = p.OpenPrice
					}
				}
			}
		}
		sp, symID, _ := s.symbolByName(ctx, e.Symbol)
		mt, _ := m.MsgType()
		return s.fill(mt, m, clOrdID, sp, symID, e.Side, res)
	}
	return nil
}

// process runs an order on the server and reports the outcome.
func (s *fsession) process(mt string, m *quickfix.Message, clOrdID string, e *orderEntry) {
	defer close(e.done)
	ctx := context.Background()
	var limit float64 // a marketable limit's price (strict mode)
	ord, err := orderHeader(m, clOrdID)
	if err == nil {
		err = s.f.refuseExpired(ord)
	}
	if err != nil {
		// Refused before it reaches the server: it never executes.
		e.reply = s.reject(mt, m, clOrdID, fixwire.RejOther, err)
		return
	}
	if s.f.opts.Strict {
		// A standard venue: resting stop and limit orders, replaced and cancelled by
		// their ClOrdIDs (resting.go).
		switch t := mustString(m, fixwire.TagOrdType); {
		case mt == fixwire.MsgOrderCancelRequest:
			e.reply = s.cancelResting(m, clOrdID, ord)
			return
		case mt == fixwire.MsgOrderCancelReplace:
			e.reply = s.replaceResting(m, clOrdID, ord)
			return
		case t == fixwire.OrdTypeLimit && mustString(m, fixwire.TagTimeInForce) == fixwire.TIFImmediate:
			// A marketable limit: a market order that fills at the limit or better, or
			// is cancelled unfilled (immediate or cancel).
			limit = getFloat(m.Body, fixwire.TagPrice)
			if !(limit > 0) {
				e.reply = s.reject(mt, m, clOrdID, fixwire.RejOther, broker.NewError(broker.ErrPermanent, broker.CodeInvalidRequest, "a Limit order (40=2) needs a positive Price (44)"))
				return
			}
		case t == fixwire.OrdTypeStop || t == fixwire.OrdTypeLimit:
			e.reply = s.newResting(m, clOrdID, ord)
			return
		}
	}
	ticket, _ := strconv.ParseInt(mustString(m, fixwire.TagPosMaintRptID), 10, 64)
	symID, _ := m.Body.GetString(fixwire.TagSymbol)
	worst := getFloat(m.Body, fixwire.TagWorstPrice)
	if limit > 0 {
		worst = limit
	}

	var (
		res  broker.OrderResult
		sp   broker.SymbolSpec
		side broker.Side
	)
	if mt == fixwire.MsgOrderCancelReplace {
		if ticket == 0 {
			e.reply = s.reject(mt, m, clOrdID, fixwire.RejUnknownOrder, broker.NewError(broker.ErrPermanent, broker.CodeInvalidRequest, "PosMaintRptID (721) names no position"))
			return
		}
		res, err = s.sess.Modify(ctx, broker.ModifyRequest{Order: ord, Ticket: ticket,
			SL: getFloat(m.Body, fixwire.TagStopLoss), TP: getFloat(m.Body, fixwire.TagTakeProfit)})
	} else {
		var ok bool
		sp, ok, err = s.symbolByID(ctx, symID)
		if err == nil && !ok {
			e.reply = s.reject(mt, m, clOrdID, fixwire.RejUnknownSymbol, broker.NewError(broker.ErrPermanent, broker.CodeInvalidRequest, "unknown symbol id %q", symID))
			return
		}
		if err == nil {
			side, ok = fixwire.ParseSide(mustString(m, fixwire.TagSide))
			if !ok {
				e.reply = s.reject(mt, m, clOrdID, fixwire.RejOther, broker.NewError(broker.ErrPermanent, broker.CodeInvalidRequest, "Side (54) must be 1 or 2"))
				return
			}
			if t := mustString(m, fixwire.TagOrdType); t != fixwire.OrdTypeMarket && limit == 0 {
				e.reply = s.reject(mt, m, clOrdID, fixwire.RejOther, broker.NewError(broker.ErrPermanent, broker.CodeInvalidRequest, "only market orders (40=1) are supported, got %q", t))
				return
			}
			lots := fixwire.ToLots(getFloat(m.Body, fixwire.TagOrderQty), sp.ContractSize)
			if ticket != 0 {
				res, err = s.sess.ClosePosition(ctx, broker.CloseRequest{Order: ord, Ticket: ticket, Volume: lots})
			} else {
				magic, _ := strconv.ParseInt(mustString(m, fixwire.TagMagic), 10, 64)
				res, err = s.sess.Open(ctx, broker.OpenRequest{Order: ord, Symbol: sp.Name, Side: side, Type: broker.Market,
					Volume: lots, SL: getFloat(m.Body, fixwire.TagStopLoss), TP: getFloat(m.Body, fixwire.TagTakeProfit),
					Magic: magic, Comment: mustString(m, fixwire.TagComment), WorstPrice: worst})
			}
		}
	}
	if err != nil {
		if broker.ClassOf(err) == broker.ErrUnknownOutcome {
			// A timeout: the client gets no reply, as when the network loses it. A
			// PossResend later learns what happened.
			return
		}
		var te *broker.TradeError
		if limit > 0 && errors.As(err, &te) && te.Code == broker.CodeRequote {
			// The market is beyond the limit: a standard venue cancels the rest of an
			// immediate-or-cancel order, here all of it.
			e.reply = s.cancelledUnfilled(m, clOrdID, err)
			return
		}
		e.reply = s.reject(mt, m, clOrdID, fixwire.RejReason(err), err)
		s.afterError(err)
		return
	}
	symNum, _ := strconv.Atoi(symID)
	e.reply = s.fill(mt, m, clOrdID, sp, symNum, side, res)
	s.send(e.reply)
}

// cancelledUnfilled reports an immediate-or-cancel order cancelled with nothing filled
// (150=4 / 39=4, CumQty 0), the reason in Text, and sends it.
func (s *fsession) cancelledUnfilled(m *quickfix.Message, clOrdID string, why error) *quickfix.Message {
	r := newMsg(fixwire.MsgExecutionReport)
	r.Body.SetString(fixwire.TagClOrdID, clOrdID)
	r.Body.SetString(fixwire.TagOrderID, s.f.nextID("o"))
	r.Body.SetString(fixwire.TagExecID, s.f.nextID("e"))
	r.Body.SetString(fixwire.TagExecType, fixwire.ExecCanceled)
	r.Body.SetString(fixwire.TagOrdStatus, fixwire.StatusCanceled)
	for _, t := range []quickfix.Tag{fixwire.TagSymbol, fixwire.TagSide, fixwire.TagOrderQty, fixwire.TagOrdType, fixwire.TagPrice} {
		if v := mustString(m, t); v != "" {
			r.Body.SetString(t, v)
		}
	}
	r.Body.SetString(fixwire.TagLeavesQty, "0")
	r.Body.SetString(fixwire.TagCumQty, "0")
	r.Body.SetString(fixwire.TagAvgPx, "0")
	r.Body.SetString(fixwire.TagTransactTime, fixwire.FormatTime(s.f.opts.Now()))
	r.Body.SetString(fixwire.TagText, "not filled within the limit: "+why.Error())
	s.send(r)
	return r
}

// refuseExpired refuses an order that arrived after its deadline, by the front's clock,
// before it reaches the server behind (the bridge server does the same): ErrExpired, never
// executed. The deadline also goes on to the server, which checks it again when it runs.
func (f *Front) refuseExpired(o broker.Order) error {
	if now := f.opts.Now(); o.Expired(now) {
		return broker.NewError(broker.ErrExpired, broker.CodeExpired, "fix front: order arrived %v after its deadline", now.Sub(o.Deadline))
	}
	return nil
}

func mustString(m *quickfix.Message, t quickfix.Tag) string {
	v, _ := m.Body.GetString(t)
	return v
}

// fill builds the report of an executed order (not sent).
func (s *fsession) fill(mt string, m *quickfix.Message, clOrdID string, sp broker.SymbolSpec, symID int, side broker.Side, res broker.OrderResult) *quickfix.Message {
	r := newMsg(fixwire.MsgExecutionReport)
	r.Body.SetString(fixwire.TagClOrdID, clOrdID)
	r.Body.SetString(fixwire.TagOrderID, s.f.nextID("o"))
	r.Body.SetString(fixwire.TagExecID, s.f.nextID("e"))
	if !s.f.opts.Strict { // a plain FIX 4.4 fill names no position
		r.Body.SetString(fixwire.TagPosMaintRptID, strconv.FormatInt(res.Ticket, 10))
	}
	r.Body.SetString(fixwire.TagTransactTime, fixwire.FormatTime(res.ServerTime))
	if mt == fixwire.MsgOrderCancelReplace {
		r.Body.SetString(fixwire.TagOrigClOrdID, mustString(m, fixwire.TagOrigClOrdID))
		r.Body.SetString(fixwire.TagExecType, fixwire.ExecReplaced)
		r.Body.SetString(fixwire.TagOrdStatus, fixwire.StatusReplaced)
		return r
	}
	units := fixwire.ToUnits(res.Volume, sp.ContractSize)
	r.Body.SetString(fixwire.TagExecType, fixwire.ExecTrade)
	r.Body.SetString(fixwire.TagOrdStatus, fixwire.StatusFilled)
	if symID > 0 {
		r.Body.SetString(fixwire.TagSymbol, strconv.Itoa(symID))
	}
	if side.Valid() {
		r.Body.SetString(fixwire.TagSide, fixwire.SideString(side))
	}
	r.Body.SetString(fixwire.TagOrderQty, fixwire.FormatFloat(units))
	r.Body.SetString(fixwire.TagLastQty, fixwire.FormatFloat(units))
	r.Body.SetString(fixwire.TagCumQty, fixwire.FormatFloat(units))
	r.Body.SetString(fixwire.TagLeavesQty, "0")
	r.Body.SetString(fixwire.TagLastPx, fixwire.FormatFloat(res.Price))
	r.Body.SetString(fixwire.TagAvgPx, fixwire.FormatFloat(res.Price))
	return r
}

// reject sends and returns the reject of an order: an ExecutionReport for a new order,
// an OrderCancelReject for a replace or a cancel.
func (s *fsession) reject(mt string, m *quickfix.Message, clOrdID, reason string, err error) *quickfix.Message {
	var r *quickfix.Message
	if mt == fixwire.MsgOrderCancelRequest {
		return s.cancelReject(mt, m, clOrdID, fixwire.CxlRejOther, err)
	}
	if mt == fixwire.MsgOrderCancelReplace {
		r = newMsg(fixwire.MsgOrderCancelReject)
		r.Body.SetString(fixwire.TagOrderID, "NONE")
		r.Body.SetString(fixwire.TagOrigClOrdID, mustString(m, fixwire.TagOrigClOrdID))
		r.Body.SetString(fixwire.TagOrdStatus, fixwire.StatusRejected)
		r.Body.SetString(fixwire.TagCxlRejRespTo, "2") // to an OrderCancelReplaceRequest
		r.Body.SetString(fixwire.TagCxlRejReason, "99")
	} else {
		r = newMsg(fixwire.MsgExecutionReport)
		r.Body.SetString(fixwire.TagOrderID, "NONE")
		r.Body.SetString(fixwire.TagExecID, s.f.nextID("e"))
		r.Body.SetString(fixwire.TagExecType, fixwire.ExecRejected)
		r.Body.SetString(fixwire.TagOrdStatus, fixwire.StatusRejected)
		r.Body.SetString(fixwire.TagOrdRejReason, reason)
		if v := mustString(m, fixwire.TagSymbol); v != "" {
			r.Body.SetString(fixwire.TagSymbol, v)
		}
		if v := mustString(m, fixwire.TagSide); v != "" {
			r.Body.SetString(fixwire.TagSide, v)
		}
		r.Body.SetString(fixwire.TagLeavesQty, "0")
		r.Body.SetString(fixwire.TagCumQty, "0")
	}
	r.Body.SetString(fixwire.TagClOrdID, clOrdID)
	s.setError(&r.Body, err)
	s.send(r)
	return r
}

// orderStatus answers an OrderStatusRequest (H) with the order's report as an order
// status (150=I): its fill or reject; for an order whose reply was lost, what the
// server's order log says (filled, or rejected as never executed); an unknown ClOrdID is
// rejected with 103=5 (unknown order) — it may still be on its way.
func (s *fsession) orderStatus(m *quickfix.Message) {
	clOrdID := mustString(m, fixwire.TagClOrdID)
	memo := s.f.memo(s.login)
	memo.mu.Lock()
	e := memo.orders[clOrdID]
	memo.mu.Unlock()
	if e == nil {
		r := newMsg(fixwire.MsgExecutionReport)
		r.Body.SetString(fixwire.TagClOrdID, clOrdID)
		r.Body.SetString(fixwire.TagOrderID, "NONE")
		r.Body.SetString(fixwire.TagExecID, s.f.nextID("st"))
		r.Body.SetString(fixwire.TagExecType, fixwire.ExecOrderStatus)
		r.Body.SetString(fixwire.TagOrdStatus, fixwire.StatusRejected)
		r.Body.SetString(fixwire.TagOrdRejReason, fixwire.RejUnknownOrder)
		r.Body.SetString(fixwire.TagText, "unknown ClOrdID "+clOrdID)
		s.send(r)
		return
	}
	<-e.done
	reply := memo.reply(e)
	if reply == nil {
		if reply = s.resolve(m, clOrdID, e.reqID); reply == nil {
			// The server never executed it and never will: a final reject, safe to resend.
			memo.setReply(e, s.reject(fixwire.MsgNewOrderSingle, m, clOrdID, fixwire.RejOther,
				broker.NewError(broker.ErrDisconnected, broker.CodeNoConnection, "the order did not execute (its request was lost)")))
			return
		}
		memo.setReply(e, reply)
	}
	s.sendStatus(reply)
}

// reply reads an entry's report once its processing ended (a later status may set it).
func (m *accountMemo) reply(e *orderEntry) *quickfix.Message {
	m.mu.Lock()
	defer m.mu.Unlock()
	return e.reply
}

// setReply records the report of an entry whose processing ended.
func (m *accountMemo) setReply(e *orderEntry, r *quickfix.Message) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e.reply = r
}
