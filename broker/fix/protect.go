package fix

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/quickfixgo/enum"
	"github.com/quickfixgo/field"
	"github.com/quickfixgo/fix44/newordersingle"
	"github.com/quickfixgo/quickfix"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/broker/fix/fixwire"
)

// Protective orders: in a dialect without stop fields (fix44), a position's stop-loss is a
// resting Stop order (40=3, StopPx 99) and its take-profit a resting Limit order (40=2,
// Price 44), both GTC, on the opposite side, for the position's quantity. Their ClOrdIDs
// are kept with the position in the book (BookPosition), so a restart or the node that
// takes the account over can replace (G) or cancel (F) them; the position's SL and TP in
// the book are their prices. FIX.md, "Protective orders".

// stopKind is a protective order's role.
type stopKind int

const (
	slKind stopKind = iota // stop-loss: a Stop order
	tpKind                 // take-profit: a Limit order
)

var stopKinds = [...]stopKind{slKind, tpKind}

// suffix ends the ClOrdIDs of a kind's orders: the id of the order (or request) they
// derive from, then this.
func (k stopKind) suffix() string {
	if k == slKind {
		return ".sl"
	}
	return ".tp"
}

func (k stopKind) String() string {
	if k == slKind {
		return "stop-loss"
	}
	return "take-profit"
}

func (k stopKind) ordType() string {
	if k == slKind {
		return fixwire.OrdTypeStop
	}
	return fixwire.OrdTypeLimit
}

func (k stopKind) priceTag() quickfix.Tag {
	if k == slKind {
		return fixwire.TagStopPx
	}
	return fixwire.TagPrice
}

// order and price address the kind's ClOrdID and price in p.
func (k stopKind) order(p *BookPosition) *string {
	if k == slKind {
		return &p.SLOrder
	}
	return &p.TPOrder
}

func (k stopKind) price(p *BookPosition) *float64 {
	if k == slKind {
		return &p.SL
	}
	return &p.TP
}

func (k stopKind) of(r broker.ModifyRequest) float64 {
	if k == slKind {
		return r.SL
	}
	return r.TP
}

// errUnknownOrder marks a cancel or replace the venue refused because it does not know
// the order (any more: filled, cancelled, never arrived): OrderCancelReject 102=1.
var errUnknownOrder = errors.New("the venue does not know the order")

// restingReply handles the reports of a protective order request: done when the report
// says the wanted state (ExecType exec or OrdStatus status), a reject classified.
func restingReply(exec, status string) func(*broker.OrderResult) func(*quickfix.Message) (bool, error) {
	return func(*broker.OrderResult) func(*quickfix.Message) (bool, error) {
		return func(r *quickfix.Message) (bool, error) {
			if mt, _ := r.MsgType(); mt == fixwire.MsgOrderCancelReject {
				err := replyError(r)
				if str(r, fixwire.TagCxlRejReason) == fixwire.CxlRejUnknownOrder {
					return true, fmt.Errorf("%w: %w", errUnknownOrder, err)
				}
				return true, err
			}
			et, st := str(r, fixwire.TagExecType), str(r, fixwire.TagOrdStatus)
			switch {
			case et == fixwire.ExecOrderStatus && st == fixwire.StatusRejected && str(r, fixwire.TagOrdRejReason) == fixwire.RejUnknownOrder:
				return true, broker.NewError(broker.ErrUnknownOutcome, broker.CodeTimeout, "fix: the venue does not know the order (yet): %s", str(r, fixwire.TagText))
			case st == fixwire.StatusRejected || et == fixwire.ExecRejected:
				return true, replyError(r)
			case et == exec || st == status:
				return true, nil
			}
			return false, nil
		}
	}
}

// protective builds a protective order of kind k for p: a NewOrderSingle (D), or with
// orig an OrderCancelReplaceRequest (G) of the order orig. Standard FIX 4.4 fields only.
func (s *session) protective(id, orig string, o broker.Order, k stopKind, p BookPosition, symID string, units, px float64) *quickfix.Message {
	var m *quickfix.Message
	side := fixwire.SideString(p.Side.Opposite())
	if orig == "" {
		m = newordersingle.New(field.NewClOrdID(id), field.NewSide(enum.Side(side)),
			field.NewTransactTime(time.Now()), field.NewOrdType(enum.OrdType(k.ordType()))).ToMessage()
	} else {
		m = newMsg(fixwire.MsgOrderCancelReplace)
		m.Body.SetString(fixwire.TagOrigClOrdID, orig)
		m.Body.SetString(fixwire.TagSide, side)
		m.Body.SetString(fixwire.TagOrdType, k.ordType())
	}
	s.setOrder(m, id, o)
	m.Body.SetString(fixwire.TagSymbol, symID)
	m.Body.SetString(fixwire.TagOrderQty, fixwire.FormatFloat(units))
	m.Body.SetString(fixwire.TagTimeInForce, fixwire.TIFGoodTillCxl)
	m.Body.SetString(k.priceTag(), fixwire.FormatFloat(px))
	return m
}

// protectCtx bounds the protective orders sent after a fill: their own reply timeout, not
// what is left of the caller's context (the fill has happened; its stops must follow).
func (s *session) protectCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), 2*s.b.cfg.ReplyTimeout+s.b.cfg.StatusTimeout)
}

// place sends a new protective order of kind k at px for p (id its ClOrdID) and, when the
// venue accepts it, or its outcome is unknown (it may rest there: a later replace or
// cancel finds out), records it in p. The caller writes p to the book.
func (s *session) place(ctx context.Context, o broker.Order, id string, k stopKind, p *BookPosition, px float64) error {
	if err := refuseExpired(o); err != nil {
		return err
	}
	symID, sp, err := s.symbol(ctx, p.Symbol)
	if err != nil {
		return err
	}
	m := s.protective(id, "", o, k, *p, symID, fixwire.ToUnits(p.Volume, sp.ContractSize), px)
	_, err = s.sendOrderWith(ctx, id, o, m, restingReply(fixwire.ExecNew, fixwire.StatusNew))
	if err == nil || errors.Is(err, broker.ErrUnknownOutcome) {
		*k.order(p), *k.price(p) = id, px
	}
	return err
}

// replace replaces p's protective order of kind k (OrderCancelReplaceRequest, id the new
// ClOrdID) with one at px for p's quantity; on success it records the new id in p.
func (s *session) replace(ctx context.Context, o broker.Order, id string, k stopKind, p *BookPosition, px float64) error {
	if err := refuseExpired(o); err != nil {
		return err
	}
	symID, sp, err := s.symbol(ctx, p.Symbol)
	if err != nil {
		return err
	}
	m := s.protective(id, *k.order(p), o, k, *p, symID, fixwire.ToUnits(p.Volume, sp.ContractSize), px)
	if _, err := s.sendOrderWith(ctx, id, o, m, restingReply(fixwire.ExecReplaced, fixwire.StatusReplaced)); err != nil {
		return err
	}
	*k.order(p), *k.price(p) = id, px
	return nil
}

// cancel cancels p's protective order of kind k (OrderCancelRequest, id its ClOrdID); a
// venue that no longer knows the order has nothing to cancel. On success p has no order
// of that kind.
func (s *session) cancel(ctx context.Context, o broker.Order, id string, k stopKind, p *BookPosition, units float64) error {
	if err := refuseExpired(o); err != nil {
		return err
	}
	symID, _, err := s.symbol(ctx, p.Symbol)
	if err != nil {
		return err
	}
	m := newMsg(fixwire.MsgOrderCancelRequest)
	m.Body.SetString(fixwire.TagOrigClOrdID, *k.order(p))
	m.Body.SetString(fixwire.TagClOrdID, id)
	m.Body.SetString(fixwire.TagSide, fixwire.SideString(p.Side.Opposite()))
	m.Body.SetString(fixwire.TagSymbol, symID)
	m.Body.SetString(fixwire.TagOrderQty, fixwire.FormatFloat(units))
	m.Body.SetString(fixwire.TagTransactTime, fixwire.FormatTime(time.Now()))
	s.noteFence(o)
	_, err = s.sendOrderWith(ctx, id, o, m, restingReply(fixwire.ExecCanceled, fixwire.StatusCanceled))
	if err != nil && !errors.Is(err, errUnknownOrder) {
		return err
	}
	*k.order(p), *k.price(p) = "", 0
	return nil
}

// change is a tracked position before and after a fill.
type change struct{ before, after BookPosition }

// recordLocked applies a fill to the book (bookMu held) and returns the ticket of the
// position the fill left open on its side (opened or grown), else of the first it
// reduced, and the positions it changed. The
// order has executed whatever the book says: a write the book refuses (the account moved
// to another node) is logged, not returned, so the fill is not taken for a failure and
// repeated; the new owner's reconcile sees the venue's truth only through its own book
// (FIX.md).
func (s *session) recordLocked(ctx context.Context, fence broker.Order, symbol string, side broker.Side, vol float64, named int64, open BookPosition) (int64, []change) {
	held, err := s.b.cfg.Book.Positions(ctx, s.creds.Login)
	if err != nil {
		s.log.Error().Err(err).Str("symbol", symbol).Msg("fix: position book not read; the fill is not tracked")
		return open.Ticket, nil
	}
	before := map[int64]BookPosition{}
	for _, p := range held {
		before[p.Ticket] = p
	}
	var ticket, first int64
	var out []change
	for i, p := range applyFill(held, symbol, side, vol, named, open) {
		if i == 0 {
			first = p.Ticket
		}
		if p.Side == side && p.Volume > 0 {
			ticket = p.Ticket
		}
		s.put(ctx, fence, p)
		out = append(out, change{before: before[p.Ticket], after: p})
	}
	switch {
	case ticket != 0:
		return ticket, out
	case first != 0:
		return first, out
	}
	return open.Ticket, out
}

// put writes p to the book, logging a refused write.
func (s *session) put(ctx context.Context, fence broker.Order, p BookPosition) {
	if err := s.b.cfg.Book.Put(ctx, s.creds.Login, fence, p); err != nil {
		s.log.Error().Err(err).Int64("ticket", p.Ticket).Msg("fix: position book not written; the fill is not tracked")
	}
}

// followFills keeps the protective orders of positions a fill changed in step (bookMu
// held): a closed position's are cancelled, a reduced or grown one's replaced for its new
// quantity. trigger is the ClOrdID of the fill's order; the requests' ClOrdIDs derive from
// it. What fails is logged: the fill stands, and a position left with a protective order
// for the wrong quantity, or a closed one with a resting order, is the operator's to see.
func (s *session) followFills(ctx context.Context, fence broker.Order, trigger string, changes []change) {
	for _, c := range changes {
		p := c.after
		if (p.SLOrder == "" && p.TPOrder == "") || near(c.before.Volume, p.Volume) {
			continue
		}
		dirty := false
		for _, k := range stopKinds {
			if *k.order(&p) == "" {
				continue
			}
			id := trigger + "." + strconv.FormatInt(p.Ticket, 10) + k.suffix()
			var err error
			if p.Volume <= volEps {
				units := 0.0
				if _, sp, serr := s.symbol(ctx, p.Symbol); serr == nil {
					units = fixwire.ToUnits(c.before.Volume, sp.ContractSize)
				}
				err = s.cancel(ctx, fence, id, k, &p, units)
			} else {
				err = s.replace(ctx, fence, id, k, &p, *k.price(&p))
				dirty = dirty || err == nil
			}
			if err != nil {
				s.log.Error().Err(err).Int64("ticket", p.Ticket).Str("order", *k.order(&p)).Stringer("kind", k).
					Msg("fix: protective order not brought in step with the position's fill")
			}
		}
		if dirty {
			s.put(ctx, fence, p)
		}
	}
}

// protectOpen places the protective orders of a position an open made (bookMu held) and
// writes them to the book. A refused one leaves the position open without it: logged, and
// the engine's next reconcile sees the missing stop and sends a Modify, which fails with
// the venue's reason (FIX.md).
func (s *session) protectOpen(ctx context.Context, o broker.Order, id string, p BookPosition, sl, tp float64) {
	for _, k := range stopKinds {
		px := sl
		if k == tpKind {
			px = tp
		}
		if px == 0 {
			continue
		}
		if err := s.place(ctx, o, id+k.suffix(), k, &p, px); err != nil {
			s.log.Error().Err(err).Int64("ticket", p.Ticket).Stringer("kind", k).Float64("price", px).
				Msg("fix: protective order refused; the position is open without it")
		}
	}
	s.put(ctx, o, p)
}

// modifyProtective implements Modify in a dialect without stop fields: each stop that
// differs from the book's is placed (a new order), replaced (G) or cancelled (F). Each
// success is written at once; the first failure is returned (a repeated Modify does what is
// left, as it compares with the book).
func (s *session) modifyProtective(ctx context.Context, req broker.ModifyRequest) (broker.OrderResult, error) {
	if err := s.bookUsable(ctx, "order"); err != nil {
		return broker.OrderResult{}, err
	}
	s.bookMu.Lock()
	defer s.bookMu.Unlock()
	held, err := s.b.cfg.Book.Positions(ctx, s.creds.Login)
	if err != nil {
		return broker.OrderResult{}, broker.NewError(broker.ErrDisconnected, broker.CodeNoConnection, "fix: position book not read: %v", err)
	}
	var p *BookPosition
	for i := range held {
		if held[i].Ticket == req.Ticket {
			p = &held[i]
		}
	}
	if p == nil {
		return broker.OrderResult{}, broker.NewError(broker.ErrPermanent, broker.CodeInvalidRequest, "fix: no open position %d", req.Ticket)
	}
	id := clOrdID(req.Order)
	res := broker.OrderResult{Ticket: req.Ticket}
	var first error
	for _, k := range stopKinds {
		want, have, cur := k.of(req), *k.price(p), *k.order(p)
		if (cur == "" && want == 0) || (cur != "" && want == have) {
			continue
		}
		var err error
		switch {
		case want == 0:
			units := 0.0
			if _, sp, serr := s.symbol(ctx, p.Symbol); serr == nil {
				units = fixwire.ToUnits(p.Volume, sp.ContractSize)
			}
			err = s.cancel(ctx, req.Order, id+k.suffix(), k, p, units)
		case cur == "":
			err = s.place(ctx, req.Order, id+k.suffix(), k, p, want)
		default:
			err = s.replace(ctx, req.Order, id+k.suffix(), k, p, want)
			if errors.Is(err, errUnknownOrder) {
				// The order is gone at the venue (it never arrived, or was cancelled there):
				// place a new one.
				*k.order(p), *k.price(p) = "", 0
				err = s.place(ctx, req.Order, id+k.suffix()+"n", k, p, want)
			}
		}
		if err == nil || errors.Is(err, broker.ErrUnknownOutcome) {
			s.put(ctx, req.Order, *p)
		}
		if err != nil && first == nil {
			first = fmt.Errorf("%w (%s of position %d)", err, k, req.Ticket)
		}
	}
	return res, first
}

// venueReport handles an ExecutionReport no request waits for, in a dialect with
// protective orders: the fill of a protective order at the venue reduces (closes) its
// position in the book and cancels the position's other protective order; a venue's
// cancel of one leaves the position without it. Reports of other orders are logged.
func (s *session) venueReport(m *quickfix.Message) {
	ctx, cancel := s.protectCtx(context.Background())
	defer cancel()
	id := str(m, fixwire.TagClOrdID)
	et, st := str(m, fixwire.TagExecType), str(m, fixwire.TagOrdStatus)
	if f := s.b.reported; f != nil {
		defer f(s.creds.Login, id)
	}
	s.bookMu.Lock()
	defer s.bookMu.Unlock()
	held, err := s.b.cfg.Book.Positions(ctx, s.creds.Login)
	if err != nil {
		s.log.Error().Err(err).Str("clordid", id).Msg("fix: position book not read; a venue report is not tracked")
		return
	}
	var (
		p    BookPosition
		kind stopKind
		ok   bool
	)
	for _, h := range held {
		for _, k := range stopKinds {
			if id != "" && *k.order(&h) == id {
				p, kind, ok = h, k, true
			}
		}
	}
	if !ok {
		s.log.Warn().Str("clordid", id).Str("exec_type", et).
			Msg("fix: execution report for an order this session is not waiting for; ignored")
		return
	}
	fence := s.currentFence()
	switch {
	case et == fixwire.ExecTrade || st == fixwire.StatusFilled || st == string(enum.OrdStatus_PARTIALLY_FILLED):
		lots := p.Volume
		if _, sp, err := s.symbol(ctx, p.Symbol); err == nil {
			if q := fixwire.ToLots(num(m, fixwire.TagLastQty), sp.ContractSize); q > 0 {
				lots = q
			}
		}
		if st != string(enum.OrdStatus_PARTIALLY_FILLED) {
			*kind.order(&p), *kind.price(&p) = "", 0
			s.put(ctx, fence, p)
		}
		s.log.Info().Int64("ticket", p.Ticket).Stringer("kind", kind).Float64("lots", lots).Str("price", str(m, fixwire.TagLastPx)).
			Msg("fix: protective order filled at the venue")
		_, changes := s.recordLocked(ctx, fence, p.Symbol, p.Side.Opposite(), lots, p.Ticket, BookPosition{})
		s.followFills(ctx, fence, id, changes)
	case et == fixwire.ExecCanceled || st == fixwire.StatusCanceled || et == string(enum.ExecType_EXPIRED) || st == string(enum.OrdStatus_EXPIRED):
		*kind.order(&p), *kind.price(&p) = "", 0
		s.put(ctx, fence, p)
		s.log.Warn().Int64("ticket", p.Ticket).Stringer("kind", kind).Str("text", str(m, fixwire.TagText)).
			Msg("fix: the venue ended a protective order; the position has none of that kind now")
	}
}

// noteFence remembers the fence of the latest order (or Fence) of the session: the venue's
// own reports (a protective order's fill) are written to the book under it.
func (s *session) noteFence(o broker.Order) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if o.Token >= s.fence.Token {
		s.fence = o
	}
}

// currentFence is the fence of the latest order, without its deadline: a venue report is
// recorded (and the other protective order cancelled) whenever it comes.
func (s *session) currentFence() broker.Order {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.fence
	f.Deadline = time.Time{}
	return f
}

func near(a, b float64) bool { return a-b < volEps && b-a < volEps }
