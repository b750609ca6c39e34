package fixfront

import (
	"context"
	"errors"
	"math"
	"strconv"
	"sync"

	"github.com/google/uuid"
	"github.com/quickfixgo/quickfix"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/broker/fix/fixwire"
)

// fsession is one logged-on FIX session and the server session behind it.
type fsession struct {
	f     *Front
	id    quickfix.SessionID
	login string
	sess  broker.Session

	// inflight is held (read) by every order being processed and (write) by a drop, so a
	// venue-side disconnect is shown after the replies of the orders it interrupted.
	inflight sync.RWMutex

	mu      sync.Mutex
	feeds   map[string]context.CancelFunc // by PosReqID
	symbols []broker.SymbolSpec           // index+1 is the numeric symbol id
	done    bool
}

// shutdown closes the server session and its feeds (once).
func (s *fsession) shutdown() {
	s.mu.Lock()
	if s.done {
		s.mu.Unlock()
		return
	}
	s.done = true
	feeds := s.feeds
	s.feeds = nil
	s.mu.Unlock()
	for _, cancel := range feeds {
		cancel()
	}
	_ = s.sess.Close()
}

// send queues a message to the client; a session already gone drops it.
func (s *fsession) send(m *quickfix.Message) {
	_ = quickfix.SendToTarget(m, s.id)
}

// newMsg starts a message of type mt.
func newMsg(mt string) *quickfix.Message {
	m := quickfix.NewMessage()
	m.Header.SetString(quickfix.Tag(35), mt)
	return m
}

// dropLater logs the client out once the orders in flight have been answered: the
// venue-side view of a connection the server dropped.
func (s *fsession) dropLater(reason string) {
	go func() {
		s.inflight.Lock()
		defer s.inflight.Unlock()
		m := newMsg(fixwire.MsgLogout)
		m.Body.SetString(fixwire.TagText, reason)
		s.send(m)
	}()
}

// symbolList returns the account's symbols in the server's order (ids are stable: the
// index plus one), reading them once per session.
func (s *fsession) symbolList(ctx context.Context) ([]broker.SymbolSpec, error) {
	s.mu.Lock()
	syms := s.symbols
	s.mu.Unlock()
	if syms != nil {
		return syms, nil
	}
	syms, err := s.sess.Symbols(ctx)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.symbols = syms
	s.mu.Unlock()
	return syms, nil
}

// symbolByID resolves a numeric symbol id.
func (s *fsession) symbolByID(ctx context.Context, id string) (broker.SymbolSpec, bool, error) {
	syms, err := s.symbolList(ctx)
	if err != nil {
		return broker.SymbolSpec{}, false, err
	}
	n, perr := strconv.Atoi(id)
	if perr != nil || n < 1 || n > len(syms) {
		return broker.SymbolSpec{}, false, nil
	}
	return syms[n-1], true, nil
}

// symbolByName finds a symbol and its id.
func (s *fsession) symbolByName(ctx context.Context, name string) (broker.SymbolSpec, int, error) {
	syms, err := s.symbolList(ctx)
	if err != nil {
		return broker.SymbolSpec{}, 0, err
	}
	for i, sp := range syms {
		if sp.Name == name {
			return sp, i + 1, nil
		}
	}
	return broker.SymbolSpec{}, 0, nil
}

// requestID is the server request id of a ClOrdID: the ClOrdID itself when it is a UUID
// (the FIX broker sends request ids), else a name-based UUID of it.
func requestID(clOrdID string) uuid.UUID {
	if id, err := uuid.Parse(clOrdID); err == nil {
		return id
	}
	return uuid.NewSHA1(uuid.NameSpaceOID, []byte("fix-clordid:"+clOrdID))
}

// orderHeader reads what every order carries: the request id, the fence (token 9001,
// deadline 9003) and the node. A deadline that is present but unreadable is an error: the
// order must not run without the bound its sender gave it.
func orderHeader(m *quickfix.Message, clOrdID string) (broker.Order, error) {
	token, _ := m.Body.GetString(fixwire.TagLeaseEpoch)
	node, _ := m.Body.GetString(fixwire.TagNodeID)
	t, _ := strconv.ParseInt(token, 10, 64)
	o := broker.Order{RequestID: requestID(clOrdID), Token: t, Node: node}
	if v, _ := m.Body.GetString(fixwire.TagDeadline); v != "" {
		d, err := fixwire.ParseTime(v)
		if err != nil {
			return o, broker.NewError(broker.ErrPermanent, broker.CodeInvalidRequest, "deadline (%d) %q is not a UTCTimestamp", fixwire.TagDeadline, v)
		}
		o.Deadline = d
	}
	return o, nil
}

func getFloat(fm quickfix.Body, t quickfix.Tag) float64 {
	s, err := fm.GetString(t)
	if err != nil {
		return 0
	}
	v, perr := fixwire.ParseFloat(s)
	if perr != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return v
}

// collStatusAssigned is CollStatus (910) 3, Assigned: the report is the account's.
const collStatusAssigned = "3"

// account answers a CollateralInquiry with a CollateralReport (strict: standard fields only).
func (s *fsession) account(m *quickfix.Message) {
	id, _ := m.Body.GetString(fixwire.TagCollInquiryID)
	info, err := s.sess.Account(context.Background())
	if err != nil {
		s.businessReject(fixwire.MsgCollateralInquiry, id, err)
		s.afterError(err)
		return
	}
	r := newMsg(fixwire.MsgCollateralReport)
	r.Body.SetString(fixwire.TagCollRptID, s.f.nextID("cr"))
	r.Body.SetString(fixwire.TagCollInquiryID, id)
	r.Body.SetString(fixwire.TagAccount, info.Login)
	r.Body.SetString(fixwire.TagCurrency, info.Currency)
	r.Body.SetString(fixwire.TagTotalNetValue, fixwire.FormatFloat(info.Equity))
	if s.f.opts.Strict {
		r.Body.SetString(fixwire.TagCollStatus, collStatusAssigned)
		s.send(r)
		return
	}
	r.Body.SetString(fixwire.TagBalance, fixwire.FormatFloat(info.Balance))
	r.Body.SetInt(fixwire.TagLeverage, info.Leverage)
	r.Body.SetInt(fixwire.TagAccountMode, int(info.Mode))
	s.send(r)
}

// businessReject answers a request the venue could not serve.
func (s *fsession) businessReject(refMsgType, refID string, err error) {
	r := newMsg(fixwire.MsgBusinessMessageReject)
	r.Body.SetString(fixwire.TagRefMsgType, refMsgType)
	r.Body.SetString(fixwire.TagBizRejRefID, refID)
	r.Body.SetInt(fixwire.TagBizRejReason, 0)
	s.setError(&r.Body, err)
	s.send(r)
}

// setError writes a classified error: text, code and class (text only in strict mode: a
// plain FIX 4.4 venue has no tags for the others).
func (s *fsession) setError(fm *quickfix.Body, err error) {
	fm.SetString(fixwire.TagText, err.Error())
	if s.f.opts.Strict {
		return
	}
	if te, ok := asTradeError(err); ok {
		fm.SetInt(fixwire.TagErrorCode, int(te.Code))
	}
	if c := fixwire.ClassName(broker.ClassOf(err)); c != "" {
		fm.SetString(fixwire.TagErrorClass, c)
	}
}

// afterError shows a server-side disconnect as a venue shows it: the session ends.
func (s *fsession) afterError(err error) {
	if broker.ClassOf(err) == broker.ErrDisconnected {
		s.dropLater("connection dropped by the server")
	}
}

// securityList answers a SecurityListRequest with one SecurityList fragment per symbol.
func (s *fsession) securityList(m *quickfix.Message) {
	id, _ := m.Body.GetString(fixwire.TagSecurityReqID)
	// Quotes move: read the specs fresh, keep the id order of the session.
	specs, err := s.sess.Symbols(context.Background())
	if err == nil {
		s.mu.Lock()
		if s.symbols == nil {
			s.symbols = specs
		}
		s.mu.Unlock()
	}
	if err != nil {
		r := newMsg(fixwire.MsgSecurityList)
		r.Body.SetString(fixwire.TagSecurityReqID, id)
		r.Body.SetInt(fixwire.TagSecReqResult, 5) // instrument data temporarily unavailable
		s.setError(&r.Body, err)
		s.send(r)
		s.afterError(err)
		return
	}
	// One message with a NoRelatedSym group: a burst of fragments costs quickfixgo far
	// more than one larger message.
	r := newMsg(fixwire.MsgSecurityList)
	r.Body.SetString(fixwire.TagSecurityReqID, id)
	r.Body.SetString(fixwire.TagSecurityResponseID, s.f.nextID("sl"))
	if len(specs) == 0 {
		r.Body.SetInt(fixwire.TagSecReqResult, 2) // no instruments found
	} else {
		r.Body.SetInt(fixwire.TagSecReqResult, 0)
	}
	r.Body.SetInt(fixwire.TagTotNoRelSym, len(specs))
	r.Body.SetBool(fixwire.TagLastFragment, true)
	g := quickfix.NewRepeatingGroup(fixwire.TagNoRelatedSym, fixwire.SymbolGroup)
	for i, sp := range specs {
		e := g.Add()
		e.SetString(fixwire.TagSymbol, strconv.Itoa(i+1))
		e.SetString(fixwire.TagSymbolName, sp.Name)
		e.SetInt(fixwire.TagSymbolDigits, sp.Digits)
		e.SetString(fixwire.TagContractMult, fixwire.FormatFloat(sp.ContractSize))
		e.SetString(fixwire.TagMinTradeVol, fixwire.FormatFloat(fixwire.ToUnits(sp.MinLot, sp.ContractSize)))
		e.SetString(fixwire.TagMaxTradeVol, fixwire.FormatFloat(fixwire.ToUnits(sp.MaxLot, sp.ContractSize)))
		e.SetString(fixwire.TagRoundLot, fixwire.FormatFloat(fixwire.ToUnits(sp.LotStep, sp.ContractSize)))
		e.SetString(fixwire.TagBid, fixwire.FormatFloat(sp.Bid))
		e.SetString(fixwire.TagAsk, fixwire.FormatFloat(sp.Ask))
		e.SetBool(fixwire.TagTradeAllowed, sp.TradeAllowed)
	}
	if len(specs) > 0 {
		r.Body.SetGroup(g)
	}
	s.send(r)
}

// setPosition writes a position's fields (symbol id, quantities, price, stops, marker).
func (s *fsession) setPosition(fm *quickfix.Body, p broker.Position) {
	sp, id, _ := s.symbolByName(context.Background(), p.Symbol)
	fm.SetString(fixwire.TagPosMaintRptID, strconv.FormatInt(p.Ticket, 10))
	if id > 0 {
		fm.SetString(fixwire.TagSymbol, strconv.Itoa(id))
	} else {
		fm.SetString(fixwire.TagSymbol, p.Symbol)
	}
	fm.SetString(fixwire.TagSymbolName, p.Symbol)
	units := fixwire.ToUnits(p.Volume, sp.ContractSize)
	fm.SetInt(fixwire.TagNoPositions, 1)
	fm.SetString(fixwire.TagPosType, "TQ")
	if p.Side == broker.Buy {
		fm.SetString(fixwire.TagLongQty, fixwire.FormatFloat(units))
		fm.SetString(fixwire.TagShortQty, "0")
	} else {
		fm.SetString(fixwire.TagLongQty, "0")
		fm.SetString(fixwire.TagShortQty, fixwire.FormatFloat(units))
	}
	fm.SetString(fixwire.TagSettlPrice, fixwire.FormatFloat(p.OpenPrice))
	fm.SetString(fixwire.TagStopLoss, fixwire.FormatFloat(p.SL))
	fm.SetString(fixwire.TagTakeProfit, fixwire.FormatFloat(p.TP))
	fm.SetString(fixwire.TagMagic, strconv.FormatInt(p.Magic, 10))
	fm.SetString(fixwire.TagComment, p.Comment)
	fm.SetString(fixwire.TagOpenTime, fixwire.FormatTime(p.OpenTime))
}

// positions answers a RequestForPositions: a snapshot (ack + one PositionReport per
// position), a subscription to the account's trades, or its end.
func (s *fsession) positions(m *quickfix.Message) {
	id, _ := m.Body.GetString(fixwire.TagPosReqID)
	sub, _ := m.Body.GetString(fixwire.TagSubReqType)
	switch sub {
	case fixwire.SubUpdates:
		s.subscribe(id)
		return
	case fixwire.SubUnsubscribe:
		s.mu.Lock()
		cancel := s.feeds[id]
		delete(s.feeds, id)
		s.mu.Unlock()
		if cancel != nil {
			cancel()
		}
		return
	}
	ps, err := s.sess.Positions(context.Background())
	ack := newMsg(fixwire.MsgRequestForPositionsAck)
	ack.Body.SetString(fixwire.TagPosReqID, id)
	ack.Body.SetString(fixwire.TagPosMaintRptID, s.f.nextID("pa"))
	if err != nil {
		ack.Body.SetString(fixwire.TagPosReqResult, fixwire.PosResultOther)
		ack.Body.SetString(fixwire.TagPosReqStatus, fixwire.PosStatusReject)
		s.setError(&ack.Body, err)
		s.send(ack)
		s.afterError(err)
		return
	}
	ack.Body.SetInt(fixwire.TagTotNumReports, len(ps))
	if len(ps) == 0 {
		ack.Body.SetString(fixwire.TagPosReqResult, fixwire.PosResultNone)
	} else {
		ack.Body.SetString(fixwire.TagPosReqResult, fixwire.PosResultValid)
	}
	ack.Body.SetString(fixwire.TagPosReqStatus, fixwire.PosStatusDone)
	s.send(ack)
	for _, p := range ps {
		r := newMsg(fixwire.MsgPositionReport)
		r.Body.SetString(fixwire.TagPosReqID, id)
		r.Body.SetInt(fixwire.TagTotNumReports, len(ps))
		r.Body.SetString(fixwire.TagPosReqResult, fixwire.PosResultValid)
		s.setPosition(&r.Body, p)
		s.send(r)
	}
}

// subscribe opens a server feed and streams its events as ExecutionReports naming the
// subscription (PosReqID) and the event's sequence number.
func (s *fsession) subscribe(id string) {
	ctx, cancel := context.WithCancel(context.Background())
	ch, err := s.sess.Subscribe(ctx)
	ack := newMsg(fixwire.MsgRequestForPositionsAck)
	ack.Body.SetString(fixwire.TagPosReqID, id)
	ack.Body.SetString(fixwire.TagPosMaintRptID, s.f.nextID("pa"))
	ack.Body.SetString(fixwire.TagSubReqType, fixwire.SubUpdates)
	if err != nil {
		cancel()
		ack.Body.SetString(fixwire.TagPosReqResult, fixwire.PosResultOther)
		ack.Body.SetString(fixwire.TagPosReqStatus, fixwire.PosStatusReject)
		s.setError(&ack.Body, err)
		s.send(ack)
		s.afterError(err)
		return
	}
	s.mu.Lock()
	if s.done {
		s.mu.Unlock()
		cancel()
		return
	}
	s.feeds[id] = cancel
	s.mu.Unlock()
	ack.Body.SetInt(fixwire.TagTotNumReports, 0)
	ack.Body.SetString(fixwire.TagPosReqResult, fixwire.PosResultValid)
	ack.Body.SetString(fixwire.TagPosReqStatus, fixwire.PosStatusDone)
	s.send(ack)
	go s.stream(ctx, id, ch)
}

// stream forwards one feed. A feed the server ended on its own (a disconnect) ends the
// FIX session, as a venue's disconnect would.
func (s *fsession) stream(ctx context.Context, id string, ch <-chan broker.Event) {
	for ev := range ch {
		r := newMsg(fixwire.MsgExecutionReport)
		r.Body.SetString(fixwire.TagOrderID, "pos-"+strconv.FormatInt(ev.Position.Ticket, 10))
		r.Body.SetString(fixwire.TagExecID, s.f.nextID("fe"))
		r.Body.SetString(fixwire.TagPosReqID, id)
		if ev.Kind == broker.Modified {
			r.Body.SetString(fixwire.TagExecType, fixwire.ExecRestated)
		} else {
			r.Body.SetString(fixwire.TagExecType, fixwire.ExecTrade)
		}
		r.Body.SetString(fixwire.TagOrdStatus, fixwire.StatusFilled)
		r.Body.SetString(fixwire.TagSide, fixwire.SideString(ev.Position.Side))
		r.Body.SetString(fixwire.TagTransactTime, fixwire.FormatTime(ev.ServerTime))
		r.Body.SetString(fixwire.TagFeedSeq, strconv.FormatInt(ev.Seq, 10))
		r.Body.SetInt(fixwire.TagFeedKind, int(ev.Kind))
		s.setPosition(&r.Body, ev.Position)
		s.send(r)
	}
	if ctx.Err() != nil {
		return // unsubscribed or logged out
	}
	s.mu.Lock()
	delete(s.feeds, id)
	s.mu.Unlock()
	s.dropLater("feed dropped by the server")
}

func asTradeError(err error) (*broker.TradeError, bool) {
	var te *broker.TradeError
	ok := errors.As(err, &te)
	return te, ok
}
