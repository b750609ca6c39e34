package fix

import (
	"context"
	"errors"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/quickfixgo/enum"
	"github.com/quickfixgo/field"
	"github.com/quickfixgo/fix44/newordersingle"
	"github.com/quickfixgo/quickfix"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/broker/fix/fixwire"
)

// symbolTable maps the venue's numeric symbol ids to specs, for one logon.
type symbolTable struct {
	list   []broker.SymbolSpec
	byName map[string]string // name -> id
	byID   map[string]broker.SymbolSpec
}

func newMsg(mt string) *quickfix.Message {
	m := quickfix.NewMessage()
	m.Header.SetString(quickfix.Tag(35), mt)
	return m
}

func str(m *quickfix.Message, t quickfix.Tag) string {
	v, _ := m.Body.GetString(t)
	return v
}

func num(m *quickfix.Message, t quickfix.Tag) float64 {
	v, err := fixwire.ParseFloat(str(m, t))
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return v
}

// replyError classifies a reject carried by m.
func replyError(m *quickfix.Message) error {
	return fixwire.ErrorFrom(str(m, fixwire.TagErrorClass), str(m, fixwire.TagErrorCode), str(m, fixwire.TagOrdRejReason), str(m, fixwire.TagText))
}

// Symbols implements broker.Session: SecurityListRequest (x, 559=4) answered by
// SecurityList fragments (y), one symbol each.
// A list younger than Config.SymbolsMaxAge is served from memory: every reconcile reads
// the symbols of the follower and of each master, and the quotes in it need not be newer.
func (s *session) Symbols(ctx context.Context) ([]broker.SymbolSpec, error) {
	if err := ctx.Err(); err != nil {
		return nil, notSent("request", err)
	}
	s.mu.Lock()
	t, at, closed := s.syms, s.symsAt, s.closed
	s.mu.Unlock()
	if closed {
		return nil, errClosed()
	}
	if t == nil || time.Since(at) >= s.b.cfg.SymbolsMaxAge {
		var err error
		if t, err = s.loadSymbols(ctx); err != nil {
			return nil, err
		}
	}
	return append([]broker.SymbolSpec(nil), t.list...), nil
}

// symLoad is one SecurityList read that concurrent callers share.
type symLoad struct {
	done chan struct{}
	t    *symbolTable
	err  error
}

// loadSymbols reads the symbol list, joining a read already under way. The shared read
// is bounded by the reply timeout, not by the context of whoever started it; each
// caller waits as long as its own context lets it.
func (s *session) loadSymbols(ctx context.Context) (*symbolTable, error) {
	s.mu.Lock()
	l := s.symLoading
	if l == nil {
		l = &symLoad{done: make(chan struct{})}
		s.symLoading = l
		go func() {
			rctx, cancel := context.WithTimeout(context.Background(), s.b.cfg.ReplyTimeout)
			defer cancel()
			l.t, l.err = s.fetchSymbols(rctx)
			s.mu.Lock()
			s.symLoading = nil
			if l.err == nil && s.loggedOn {
				s.syms, s.symsAt = l.t, time.Now()
			}
			s.mu.Unlock()
			close(l.done)
		}()
	}
	s.mu.Unlock()
	select {
	case <-l.done:
		return l.t, l.err
	case <-ctx.Done():
		return nil, notSent("symbol list request", ctx.Err())
	}
}

func (s *session) fetchSymbols(ctx context.Context) (*symbolTable, error) {
	if !s.feat.SecurityList {
		return configuredTable(s.symList), nil
	}
	id := s.b.nextID("s")
	m := newMsg(fixwire.MsgSecurityListRequest)
	m.Body.SetString(fixwire.TagSecurityReqID, id)
	m.Body.SetInt(fixwire.TagSecListReqTyp, 4) // all securities
	t := &symbolTable{byName: map[string]string{}, byID: map[string]broker.SymbolSpec{}}
	err := s.request(ctx, id, m, false, func(r *quickfix.Message) (bool, error) {
		switch str(r, fixwire.TagSecReqResult) {
		case "0", "":
		case "2": // no instruments
			return true, nil
		default:
			return true, replyError(r)
		}
		entries := fixwire.GroupEntries(str(r, tagRaw), fixwire.TagNoRelatedSym, fixwire.TagSymbol, groupTags)
		if len(entries) == 0 && str(r, fixwire.TagSymbol) != "" {
			// A venue that sends one symbol per fragment.
			e := map[quickfix.Tag]string{}
			for _, tg := range groupTags {
				e[tg] = str(r, tg)
			}
			entries = append(entries, e)
		}
		for _, e := range entries {
			t.add(e)
		}
		total, _ := strconv.Atoi(str(r, fixwire.TagTotNoRelSym))
		last, _ := r.Body.GetBool(fixwire.TagLastFragment)
		return last || len(t.list) >= total, nil
	})
	if err != nil {
		return nil, err
	}
	return t, nil
}

// groupTags are the fields of a SecurityList entry.
var groupTags = []quickfix.Tag{fixwire.TagSymbol, fixwire.TagSymbolName, fixwire.TagSymbolDigits, fixwire.TagContractMult,
	fixwire.TagMinTradeVol, fixwire.TagMaxTradeVol, fixwire.TagRoundLot, fixwire.TagBid, fixwire.TagAsk, fixwire.TagTradeAllowed}

// maxDigits bounds a symbol's price digits (MetaTrader uses at most 8).
const maxDigits = 10

// add records one SecurityList entry.
func (t *symbolTable) add(e map[quickfix.Tag]string) {
	f := func(tg quickfix.Tag) float64 {
		v, err := fixwire.ParseFloat(e[tg])
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return 0
		}
		return v
	}
	sid := e[fixwire.TagSymbol]
	if sid == "" {
		return
	}
	name := e[fixwire.TagSymbolName]
	if name == "" {
		name = sid
	}
	cs := f(fixwire.TagContractMult)
	if cs <= 0 {
		cs = 1
	}
	digits, _ := strconv.Atoi(e[fixwire.TagSymbolDigits])
	if digits < 0 || digits > maxDigits {
		return // a venue's garbage: a symbol with no sane point is never traded
	}
	sp := broker.SymbolSpec{
		Name: name, ContractSize: cs,
		MinLot:  fixwire.ToLots(f(fixwire.TagMinTradeVol), cs),
		MaxLot:  fixwire.ToLots(f(fixwire.TagMaxTradeVol), cs),
		LotStep: fixwire.ToLots(f(fixwire.TagRoundLot), cs),
		Digits:  digits, Point: math.Pow10(-digits), TradeAllowed: e[fixwire.TagTradeAllowed] != "N",
		Bid: f(fixwire.TagBid), Ask: f(fixwire.TagAsk),
	}
	t.list = append(t.list, sp)
	t.byName[name] = sid
	t.byID[sid] = sp
}

// symbols returns the current logon's table, reading it when there is none.
func (s *session) symbols(ctx context.Context) (*symbolTable, error) {
	s.mu.Lock()
	t := s.syms
	s.mu.Unlock()
	if t != nil {
		return t, nil
	}
	return s.loadSymbols(ctx)
}

// symbol resolves a symbol name, reading the list again once when it is not known.
func (s *session) symbol(ctx context.Context, name string) (string, broker.SymbolSpec, error) {
	t, err := s.symbols(ctx)
	if err != nil {
		return "", broker.SymbolSpec{}, err
	}
	id, ok := t.byName[name]
	if !ok {
		if t, err = s.loadSymbols(ctx); err != nil {
			return "", broker.SymbolSpec{}, err
		}
		if id, ok = t.byName[name]; !ok {
			return "", broker.SymbolSpec{}, broker.NewError(broker.ErrPermanent, broker.CodeInvalidRequest, "fix: unknown symbol %q", name)
		}
	}
	return id, t.byID[id], nil
}

// Account implements broker.Session: CollateralInquiry (BB) answered by CollateralReport
// (BA) or BusinessMessageReject (j).
//
// In a dialect where CollateralInquiry is optional (fix44), a venue that refuses it as
// unsupported (a Reject, or a BusinessMessageReject that is not "not available now") does
// not say the balance and equity: Account returns the login, the configured position mode
// and EquityUnknown, without an error, and the session does not ask that venue again.
func (s *session) Account(ctx context.Context) (broker.AccountInfo, error) {
	if s.noCollateral.Load() {
		return s.unknownEquity(), nil
	}
	info, err := s.collateral(ctx)
	var rf *refusedError
	if err != nil && !s.feat.Collateral && errors.As(err, &rf) && rf.msgType == fixwire.MsgCollateralInquiry &&
		errors.Is(err, broker.ErrPermanent) {
		if !s.noCollateral.Swap(true) {
			s.log.Info().Err(err).Msg("fix: the venue refuses CollateralInquiry; the account's balance and equity are unknown")
		}
		return s.unknownEquity(), nil
	}
	return info, err
}

// unknownEquity is the account as far as a venue without CollateralInquiry lets it be
// known: its login and the configured position mode (the account's, else the node's, else
// netting: the only one a dialect without position ids serves).
func (s *session) unknownEquity() broker.AccountInfo {
	return broker.AccountInfo{Login: s.creds.Login, Mode: s.posMode, EquityUnknown: true}
}

// collateral asks the venue for the account: CollateralInquiry (BB).
func (s *session) collateral(ctx context.Context) (broker.AccountInfo, error) {
	id := s.b.nextID("c")
	m := newMsg(fixwire.MsgCollateralInquiry)
	m.Body.SetString(fixwire.TagCollInquiryID, id)
	m.Body.SetString(fixwire.TagAccount, s.creds.Login)
	var info broker.AccountInfo
	err := s.request(ctx, id, m, false, func(r *quickfix.Message) (bool, error) {
		if mt, _ := r.MsgType(); mt != fixwire.MsgCollateralReport {
			return true, replyError(r)
		}
		lev, _ := strconv.Atoi(str(r, fixwire.TagLeverage))
		mode, _ := strconv.Atoi(str(r, fixwire.TagAccountMode))
		info = broker.AccountInfo{
			Login: str(r, fixwire.TagAccount), Currency: str(r, fixwire.TagCurrency),
			Balance: num(r, fixwire.TagBalance), Equity: num(r, fixwire.TagTotalNetValue),
			Leverage: lev, Mode: broker.AccountMode(mode),
		}
		if info.Login == "" {
			info.Login = s.creds.Login
		}
		if info.Mode == 0 && !s.feat.PositionIDs {
			// A standard CollateralReport has no position mode (ours is the custom 9073):
			// the configured one, which is what a dialect without position ids serves.
			info.Mode = s.posMode
		}
		return true, nil
	})
	return info, err
}

// position reads the position fields of a PositionReport or feed ExecutionReport.
func position(r *quickfix.Message, t *symbolTable) broker.Position {
	ticket, _ := strconv.ParseInt(str(r, fixwire.TagPosMaintRptID), 10, 64)
	sp, ok := t.byID[str(r, fixwire.TagSymbol)]
	name := str(r, fixwire.TagSymbolName)
	if ok {
		name = sp.Name
	}
	long, short := num(r, fixwire.TagLongQty), num(r, fixwire.TagShortQty)
	p := broker.Position{Ticket: ticket, Symbol: name, Side: broker.Buy, Volume: fixwire.ToLots(long, sp.ContractSize)}
	if short > 0 || (long == 0 && str(r, fixwire.TagSide) == fixwire.SideSell) {
		p.Side, p.Volume = broker.Sell, fixwire.ToLots(short, sp.ContractSize)
	}
	p.OpenPrice = num(r, fixwire.TagSettlPrice)
	p.SL, p.TP = num(r, fixwire.TagStopLoss), num(r, fixwire.TagTakeProfit)
	p.Magic, _ = strconv.ParseInt(str(r, fixwire.TagMagic), 10, 64)
	p.Comment = str(r, fixwire.TagComment)
	p.OpenTime, _ = fixwire.ParseTime(str(r, fixwire.TagOpenTime))
	return p
}

// positionsRequest is a RequestForPositions (AN) for the account's positions (724=0) with
// what standard FIX 4.4 requires of it: Account (1), AccountType (581, 1 = carried on the
// customer side), ClearingBusinessDate (715, today in UTC) and TransactTime (60).
func (s *session) positionsRequest(id, subType string) *quickfix.Message {
	now := time.Now().UTC()
	m := newMsg(fixwire.MsgRequestForPositions)
	m.Body.SetString(fixwire.TagPosReqID, id)
	m.Body.SetInt(fixwire.TagPosReqType, 0)
	m.Body.SetString(fixwire.TagSubReqType, subType)
	m.Body.SetString(fixwire.TagAccount, s.creds.Login)
	m.Body.SetInt(fixwire.TagAccountType, 1)
	m.Body.SetString(fixwire.TagClearingBizDate, now.Format("20060102"))
	m.Body.SetString(fixwire.TagTransactTime, fixwire.FormatTime(now))
	return m
}

// bookUsable fails a call served from the position book as a request to the venue would
// fail: on a closed session, or with an ended context.
func (s *session) bookUsable(ctx context.Context, what string) error {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return errClosed()
	}
	if err := ctx.Err(); err != nil {
		return notSent(what, err)
	}
	return nil
}

// Positions implements broker.Session: RequestForPositions (AN, 263=0) answered by
// RequestForPositionsAck (AO, 727 = count) and that many PositionReports (AP).
func (s *session) Positions(ctx context.Context) ([]broker.Position, error) {
	if !s.feat.PositionIDs {
		// No position ids: the venue's reports could not say which copy is which, and a
		// strict venue refuses the request; the book has what our fills made. A closed
		// session and an ended context fail as they do for a request to the venue.
		if err := s.bookUsable(ctx, "positions (book)"); err != nil {
			return nil, err
		}
		held, err := s.b.cfg.Book.Positions(ctx, s.creds.Login)
		if err != nil {
			return nil, err
		}
		out := make([]broker.Position, len(held))
		for i, p := range held {
			out[i] = p.Position
		}
		return out, nil
	}
	t, err := s.symbols(ctx)
	if err != nil {
		return nil, err
	}
	id := s.b.nextID("p")
	m := s.positionsRequest(id, fixwire.SubSnapshot)
	out := []broker.Position{}
	want := -1
	err = s.request(ctx, id, m, false, func(r *quickfix.Message) (bool, error) {
		if mt, _ := r.MsgType(); mt == fixwire.MsgRequestForPositionsAck {
			res := str(r, fixwire.TagPosReqResult)
			if res != fixwire.PosResultValid && res != fixwire.PosResultNone {
				return true, replyError(r)
			}
			want, _ = strconv.Atoi(str(r, fixwire.TagTotNumReports))
			return len(out) >= want, nil
		}
		out = append(out, position(r, t))
		return want >= 0 && len(out) >= want, nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// refuseExpired refuses, before anything is sent, an order whose deadline has passed
// (nothing is executed: ErrExpired). The deadline also travels with the order (9003) for
// a venue that checks it on arrival; one that does not leaves this check and the gate.
func refuseExpired(o broker.Order) error {
	if now := time.Now(); o.Expired(now) {
		return broker.NewError(broker.ErrExpired, broker.CodeExpired, "fix: order %v past its deadline, not sent", now.Sub(o.Deadline))
	}
	return nil
}

// Fence implements broker.Session. FIX has no message that raises a fencing token without
// an order: the token travels with every order (9001), so this only refuses an expired o.
// The session remembers o's token: the venue's own reports (a protective order's fill)
// are written to the position book under the latest one.
func (s *session) Fence(_ context.Context, o broker.Order) error {
	if err := refuseExpired(o); err != nil {
		return err
	}
	s.noteFence(o)
	return nil
}

// clOrdID is the ClOrdID of an order: its request id.
func clOrdID(o broker.Order) string {
	if o.RequestID == uuid.Nil {
		return uuid.NewString()
	}
	return o.RequestID.String()
}

// setOrder writes what every order carries: ClOrdID and time; in a dialect with them,
// the fence (token and deadline) and the node.
func (s *session) setOrder(m *quickfix.Message, id string, o broker.Order) {
	s.noteFence(o)
	m.Body.SetString(fixwire.TagClOrdID, id)
	if s.feat.Fence {
		setFence(m, o)
	}
	if o.Node != "" && s.feat.OrderTags {
		m.Body.SetString(fixwire.TagNodeID, o.Node)
	}
	m.Body.SetString(fixwire.TagTransactTime, fixwire.FormatTime(time.Now()))
}

// setFence writes the order's fencing token (9001) and absolute deadline (9003, absent
// for none): a venue that checks them refuses a stale or late order (the simulator's
// front does, like the bridge server).
func setFence(m *quickfix.Message, o broker.Order) {
	m.Body.SetString(fixwire.TagLeaseEpoch, strconv.FormatInt(o.Token, 10))
	if o.Deadline.IsZero() {
		m.Body.Remove(fixwire.TagDeadline)
	} else {
		m.Body.SetString(fixwire.TagDeadline, fixwire.FormatTime(o.Deadline))
	}
}

// newOrderSingle is a market IOC NewOrderSingle (D) for units of the symbol, with the
// order's header fields.
func (s *session) newOrderSingle(id string, o broker.Order, side broker.Side, symID string, units float64) *quickfix.Message {
	m := newordersingle.New(field.NewClOrdID(id), field.NewSide(enum.Side(fixwire.SideString(side))),
		field.NewTransactTime(time.Now()), field.NewOrdType(enum.OrdType_MARKET)).ToMessage()
	s.setOrder(m, id, o)
	m.Body.SetString(fixwire.TagSymbol, symID)
	m.Body.SetString(fixwire.TagOrderQty, fixwire.FormatFloat(units))
	m.Body.SetString(fixwire.TagTimeInForce, fixwire.TIFImmediate)
	return m
}

// sendOrder sends an order (or resends the one first sent under its ClOrdID, with
// PossResend) and waits for its final report. A resend carries the fence of o, the gate
// check that let it out now, not the first send's: its deadline is the later one.
func (s *session) sendOrder(ctx context.Context, id string, o broker.Order, m *quickfix.Message, contractSize float64) (broker.OrderResult, error) {
	return s.sendOrderWith(ctx, id, o, m, func(res *broker.OrderResult) func(*quickfix.Message) (bool, error) {
		return orderReply(res, contractSize)
	})
}

// sendOrderWith is sendOrder with the reports of the order (and of the status request
// after a lost reply) handled by reply(&result).
func (s *session) sendOrderWith(ctx context.Context, id string, o broker.Order, m *quickfix.Message, reply func(*broker.OrderResult) func(*quickfix.Message) (bool, error)) (broker.OrderResult, error) {
	memo := s.b.sentFor(s.creds.Login)
	if first := memo.lookup(id); first != nil {
		m = quickfix.NewMessage()
		first.CopyInto(m)
		m.Header.SetBool(fixwire.TagPossResend, true)
		if s.feat.Fence {
			setFence(m, o)
		}
	} else if m == nil {
		return broker.OrderResult{}, broker.NewError(broker.ErrPermanent, broker.CodeInvalidRequest, "fix: resend of %s: the original order is no longer remembered", id)
	} else {
		keep := quickfix.NewMessage()
		m.CopyInto(keep)
		memo.remember(id, keep)
	}
	var res broker.OrderResult
	err := s.request(ctx, id, m, true, reply(&res))
	if errors.Is(err, errNoReply) && s.b.cfg.StatusTimeout > 0 && ctx.Err() == nil {
		// Ask before giving up: a venue that knows the order's fate turns the unknown
		// outcome into a known one.
		h := newMsg(fixwire.MsgOrderStatusRequest)
		h.Body.SetString(fixwire.TagClOrdID, id)
		h.Body.SetString(fixwire.TagOrderID, "NONE")
		for _, t := range []quickfix.Tag{fixwire.TagSymbol, fixwire.TagSide} {
			if v := str(m, t); v != "" {
				h.Body.SetString(t, v)
			}
		}
		var st broker.OrderResult
		serr := s.request(context.WithValue(ctx, replyTimeoutKey{}, s.b.cfg.StatusTimeout), id, h, true, reply(&st))
		var rf *refusedError
		if errors.As(serr, &rf) && rf.msgType == fixwire.MsgOrderStatusRequest {
			// The venue refused the question, not the order: its outcome stays unknown.
			return res, err
		}
		if serr == nil || !errors.Is(serr, broker.ErrUnknownOutcome) {
			return st, serr
		}
	}
	return res, err
}

// orderReply handles the reports of one order: a fill (or, for a status request, the
// order's status) ends it with a result, a reject with its classified error, a status
// saying the venue does not know the order leaves the outcome unknown.
func orderReply(res *broker.OrderResult, contractSize float64) func(*quickfix.Message) (bool, error) {
	return func(r *quickfix.Message) (bool, error) {
		mt, _ := r.MsgType()
		if mt == fixwire.MsgOrderCancelReject {
			return true, replyError(r)
		}
		status := str(r, fixwire.TagOrdStatus)
		switch {
		case str(r, fixwire.TagExecType) == fixwire.ExecOrderStatus && status == fixwire.StatusRejected &&
			str(r, fixwire.TagOrdRejReason) == fixwire.RejUnknownOrder:
			return true, broker.NewError(broker.ErrUnknownOutcome, broker.CodeTimeout, "fix: the venue does not know the order (yet): %s", str(r, fixwire.TagText))
		case status == fixwire.StatusRejected || str(r, fixwire.TagExecType) == fixwire.ExecRejected:
			return true, replyError(r)
		case status == fixwire.StatusCanceled || status == fixwire.StatusExpired:
			// An immediate-or-cancel order the venue did not fill in whole (beyond its limit,
			// the worst price, or for want of liquidity): what it did fill, if anything, is
			// the order's result; nothing filled is a requote, resent like one.
			if num(r, fixwire.TagCumQty) <= 0 {
				return true, broker.NewError(broker.ErrRetryable, broker.CodeRequote, "fix: the venue cancelled the order unfilled: %s", str(r, fixwire.TagText))
			}
			fillResult(res, r, num(r, fixwire.TagAvgPx), num(r, fixwire.TagCumQty), contractSize)
			return true, nil
		case status == fixwire.StatusFilled || status == fixwire.StatusReplaced:
			price := num(r, fixwire.TagLastPx)
			if price == 0 {
				price = num(r, fixwire.TagAvgPx)
			}
			qty := num(r, fixwire.TagLastQty)
			if qty == 0 {
				qty = num(r, fixwire.TagCumQty)
			}
			fillResult(res, r, price, qty, contractSize)
			return true, nil
		}
		return false, nil // new, pending: wait for the fill or the reject
	}
}

// fillResult is the result of a fill report r: its position id (721, when the venue names
// one), price, quantity in lots and server time.
func fillResult(res *broker.OrderResult, r *quickfix.Message, price, qty, contractSize float64) {
	res.Ticket, _ = strconv.ParseInt(str(r, fixwire.TagPosMaintRptID), 10, 64)
	res.Price = price
	res.Volume = fixwire.ToLots(qty, contractSize)
	res.ServerTime, _ = fixwire.ParseTime(str(r, fixwire.TagTransactTime))
}

// Open implements broker.Session: NewOrderSingle (D, market) answered by an
// ExecutionReport (8): filled (39=2) or rejected (39=8).
func (s *session) Open(ctx context.Context, req broker.OpenRequest) (broker.OrderResult, error) {
	if err := ctx.Err(); err != nil {
		return broker.OrderResult{}, notSent("order", err)
	}
	if err := refuseExpired(req.Order); err != nil {
		return broker.OrderResult{}, err
	}
	if req.Type != broker.Market {
		return broker.OrderResult{}, broker.NewError(broker.ErrPermanent, broker.CodeInvalidRequest, "fix: only market orders are supported")
	}
	id := clOrdID(req.Order)
	if s.b.sentFor(s.creds.Login).lookup(id) != nil {
		_, sp, err := s.symbol(ctx, req.Symbol)
		if err != nil {
			return broker.OrderResult{}, err
		}
		res, err := s.sendOrder(ctx, id, req.Order, nil, sp.ContractSize)
		return s.recordOpen(ctx, id, req, res, err)
	}
	symID, sp, err := s.symbol(ctx, req.Symbol)
	if err != nil {
		return broker.OrderResult{}, err
	}
	m := s.newOrderSingle(id, req.Order, req.Side, symID, fixwire.ToUnits(req.Volume, sp.ContractSize))
	switch {
	case s.feat.OrderTags:
		m.Body.SetString(fixwire.TagStopLoss, fixwire.FormatFloat(req.SL))
		m.Body.SetString(fixwire.TagTakeProfit, fixwire.FormatFloat(req.TP))
		m.Body.SetString(fixwire.TagMagic, strconv.FormatInt(req.Magic, 10))
		if req.Comment != "" {
			m.Body.SetString(fixwire.TagComment, req.Comment)
		}
		if req.WorstPrice > 0 {
			// The deviation bound at the fill: the venue refuses beyond it as a requote.
			m.Body.SetString(fixwire.TagWorstPrice, fixwire.FormatFloat(req.WorstPrice))
		}
	default:
		if req.Comment != "" {
			m.Body.SetString(fixwire.TagText, req.Comment) // the copy marker, in a standard tag
		}
		if req.WorstPrice > 0 {
			// Standard FIX has no worst price for a market order: a limit order at it,
			// immediate or cancel, fills at it or better, or is cancelled unfilled.
			m.Body.SetString(fixwire.TagOrdType, fixwire.OrdTypeLimit)
			m.Body.SetString(fixwire.TagPrice, fixwire.FormatFloat(req.WorstPrice))
		}
	}
	res, err := s.sendOrder(ctx, id, req.Order, m, sp.ContractSize)
	return s.recordOpen(ctx, id, req, res, err)
}

// recordOpen puts a fill of an open into the book, in a dialect without position ids:
// the result names the tracked position it opened (or the one it netted against). The
// protective orders of positions the fill reduced follow it, and the position it opened
// gets its own for the requested stops (protect.go).
func (s *session) recordOpen(ctx context.Context, id string, req broker.OpenRequest, res broker.OrderResult, err error) (broker.OrderResult, error) {
	if err != nil || s.feat.PositionIDs {
		return res, err
	}
	s.bookMu.Lock()
	defer s.bookMu.Unlock()
	open := BookPosition{Position: broker.Position{Ticket: bookTicket(id), OpenPrice: res.Price,
		Magic: req.Magic, Comment: req.Comment, OpenTime: res.ServerTime}}
	ticket, changes := s.recordLocked(ctx, req.Order, req.Symbol, req.Side, res.Volume, 0, open)
	res.Ticket = ticket
	pctx, cancel := s.protectCtx(ctx)
	defer cancel()
	s.followFills(pctx, req.Order, id, changes)
	for _, c := range changes {
		if c.after.Ticket == open.Ticket && c.after.Volume > 0 && (req.SL != 0 || req.TP != 0) {
			s.protectOpen(pctx, req.Order, id, c.after, req.SL, req.TP)
		}
	}
	return res, nil
}

// ClosePosition implements broker.Session: a NewOrderSingle of the opposite side naming the
// position (721), for the requested or the whole volume. The position's side and volume
// come from a RequestForPositions first (FIX closes are orders, not a close command).
func (s *session) ClosePosition(ctx context.Context, req broker.CloseRequest) (broker.OrderResult, error) {
	if err := ctx.Err(); err != nil {
		return broker.OrderResult{}, notSent("order", err)
	}
	if err := refuseExpired(req.Order); err != nil {
		return broker.OrderResult{}, err
	}
	id := clOrdID(req.Order)
	memo := s.b.sentFor(s.creds.Login)
	if first := memo.lookup(id); first != nil {
		t, err := s.symbols(ctx)
		if err != nil {
			return broker.OrderResult{}, err
		}
		sp := t.byID[str(first, fixwire.TagSymbol)]
		res, err := s.sendOrder(ctx, id, req.Order, nil, sp.ContractSize)
		return s.recordClose(ctx, req, sp.Name, sideOf(str(first, fixwire.TagSide)), res, err)
	}
	ps, err := s.Positions(ctx)
	if err != nil {
		return broker.OrderResult{}, err
	}
	var pos *broker.Position
	for i := range ps {
		if ps[i].Ticket == req.Ticket {
			pos = &ps[i]
		}
	}
	if pos == nil {
		return broker.OrderResult{}, broker.NewError(broker.ErrPermanent, broker.CodeInvalidRequest, "fix: no open position %d", req.Ticket)
	}
	symID, sp, err := s.symbol(ctx, pos.Symbol)
	if err != nil {
		return broker.OrderResult{}, err
	}
	vol := req.Volume
	if vol == 0 {
		vol = pos.Volume
	}
	m := s.newOrderSingle(id, req.Order, pos.Side.Opposite(), symID, fixwire.ToUnits(vol, sp.ContractSize))
	if s.feat.PositionIDs {
		m.Body.SetString(fixwire.TagPosMaintRptID, strconv.FormatInt(req.Ticket, 10))
	}
	res, err := s.sendOrder(ctx, id, req.Order, m, sp.ContractSize)
	return s.recordClose(ctx, req, pos.Symbol, pos.Side.Opposite(), res, err)
}

// recordClose puts a fill of a close into the book, in a dialect without position ids: it
// reduces the named position first; the protective orders of a closed position are
// cancelled, those of a reduced one replaced for what is left.
func (s *session) recordClose(ctx context.Context, req broker.CloseRequest, symbol string, side broker.Side, res broker.OrderResult, err error) (broker.OrderResult, error) {
	if err != nil || s.feat.PositionIDs {
		return res, err
	}
	s.bookMu.Lock()
	defer s.bookMu.Unlock()
	_, changes := s.recordLocked(ctx, req.Order, symbol, side, res.Volume, req.Ticket, BookPosition{})
	pctx, cancel := s.protectCtx(ctx)
	defer cancel()
	s.followFills(pctx, req.Order, clOrdID(req.Order), changes)
	res.Ticket = req.Ticket
	return res, nil
}

// Modify implements broker.Session: OrderCancelReplaceRequest (G) naming the position
// (721) with the new stops, answered by an ExecutionReport (150=5) or OrderCancelReject (9).
// In a dialect without stop fields it changes the position's protective orders instead
// (modifyProtective).
func (s *session) Modify(ctx context.Context, req broker.ModifyRequest) (broker.OrderResult, error) {
	if err := ctx.Err(); err != nil {
		return broker.OrderResult{}, notSent("order", err)
	}
	if err := refuseExpired(req.Order); err != nil {
		return broker.OrderResult{}, err
	}
	if !s.feat.OrderTags {
		return s.modifyProtective(ctx, req)
	}
	id := clOrdID(req.Order)
	if s.b.sentFor(s.creds.Login).lookup(id) != nil {
		return s.sendOrder(ctx, id, req.Order, nil, 1)
	}
	m := newMsg(fixwire.MsgOrderCancelReplace)
	s.setOrder(m, id, req.Order)
	m.Body.SetString(fixwire.TagOrigClOrdID, "pos-"+strconv.FormatInt(req.Ticket, 10))
	m.Body.SetString(fixwire.TagPosMaintRptID, strconv.FormatInt(req.Ticket, 10))
	m.Body.SetString(fixwire.TagOrdType, fixwire.OrdTypeMarket)
	m.Body.SetString(fixwire.TagStopLoss, fixwire.FormatFloat(req.SL))
	m.Body.SetString(fixwire.TagTakeProfit, fixwire.FormatFloat(req.TP))
	res, err := s.sendOrder(ctx, id, req.Order, m, 1)
	res.Volume, res.Price = 0, 0
	return res, err
}

// feedBuffer is the capacity of a subscription's channel; a consumer that falls that far
// behind loses the subscription (and resubscribes into a new epoch).
const feedBuffer = 1024

// feed is one subscription: an epoch and its events.
type feed struct {
	epoch int64
	ch    chan broker.Event
	done  chan struct{}
	syms  *symbolTable

	mu     sync.Mutex
	seq    int64
	closed bool
}

func (f *feed) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.closed {
		f.closed = true
		close(f.ch)
		close(f.done)
	}
}

// Subscribe implements broker.Session: RequestForPositions with 263=1 (snapshot plus
// updates) acknowledged by AO; then every change of the account's positions arrives as an
// ExecutionReport naming the subscription (710), with its sequence number (9040) and kind
// (9041). Each subscription is a new epoch; a new logon ends every subscription.
func (s *session) Subscribe(ctx context.Context) (<-chan broker.Event, error) {
	if err := ctx.Err(); err != nil {
		return nil, notSent("subscribe", err)
	}
	if every := s.b.cfg.PollPositions; every > 0 {
		return s.pollFeed(ctx, every)
	}
	t, err := s.symbols(ctx)
	if err != nil {
		return nil, err
	}
	id := s.b.nextID("f")
	f := &feed{epoch: s.b.epochs.Add(1), ch: make(chan broker.Event, feedBuffer), done: make(chan struct{}), syms: t}
	s.mu.Lock()
	if !s.loggedOn || s.closed {
		s.mu.Unlock()
		return nil, errClosedOrDown(s)
	}
	s.feeds[id] = f
	s.mu.Unlock()
	m := s.positionsRequest(id, fixwire.SubUpdates)
	err = s.request(ctx, id, m, false, func(r *quickfix.Message) (bool, error) {
		if str(r, fixwire.TagPosReqResult) != fixwire.PosResultValid {
			return true, replyError(r)
		}
		return true, nil
	})
	if err != nil {
		s.endFeed(id)
		return nil, err
	}
	go func() {
		select {
		case <-ctx.Done():
			s.endFeed(id)
			_ = quickfix.SendToTarget(s.positionsRequest(id, fixwire.SubUnsubscribe), s.id)
		case <-f.done:
		}
	}()
	return f.ch, nil
}

func errClosedOrDown(s *session) error {
	if s.closed {
		return errClosed()
	}
	return broker.NewError(broker.ErrDisconnected, broker.CodeNoConnection, "fix: session down")
}

// endFeed closes a subscription.
func (s *session) endFeed(id string) {
	s.mu.Lock()
	f := s.feeds[id]
	delete(s.feeds, id)
	s.mu.Unlock()
	if f != nil {
		f.close()
	}
}

// feedReport turns a feed ExecutionReport into an event; false when no subscription has
// the id.
func (s *session) feedReport(id string, r *quickfix.Message) bool {
	s.mu.Lock()
	f := s.feeds[id]
	s.mu.Unlock()
	if f == nil {
		return false
	}
	p := position(r, f.syms)
	kind, _ := strconv.Atoi(str(r, fixwire.TagFeedKind))
	ev := broker.Event{Login: s.creds.Login, Epoch: f.epoch, Kind: broker.EventKind(kind), Position: p}
	if ev.Kind < broker.Opened || ev.Kind > broker.Closed {
		switch {
		case str(r, fixwire.TagExecType) == fixwire.ExecRestated:
			ev.Kind = broker.Modified
		case p.Volume == 0:
			ev.Kind = broker.Closed
		default:
			ev.Kind = broker.Opened
		}
	}
	ev.ServerTime, _ = fixwire.ParseTime(str(r, fixwire.TagTransactTime))
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return true
	}
	// The venue's sequence number shows its gaps; a venue without one is counted here
	// (FIX itself loses nothing within a logon).
	if seq, err := strconv.ParseInt(str(r, fixwire.TagFeedSeq), 10, 64); err == nil && seq > 0 {
		f.seq = seq
	} else {
		f.seq++
	}
	ev.Seq = f.seq
	select {
	case f.ch <- ev:
	default: // the consumer is too far behind: end the subscription, it resubscribes
		f.closed = true
		close(f.ch)
		close(f.done)
	}
	return true
}

// sideOf reads Side (54).
func sideOf(v string) broker.Side {
	if v == fixwire.SideSell {
		return broker.Sell
	}
	return broker.Buy
}
