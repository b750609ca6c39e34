package sim

import (
	"fmt"
	"strings"
	"time"

	"github.com/snapcopier/copier/broker"
)

// openOrder is a market order to open (or, on a netting account, change) a position.
type openOrder struct {
	symbol  string
	side    broker.Side
	volume  float64
	sl, tp  float64
	magic   int64
	comment string
	worst   float64 // broker.OpenRequest.WorstPrice
}

// resolve finds the symbol an account names; the account's suffix is required.
func (s *Server) resolve(a *account, name string) (*symbol, error) {
	if base, ok := strings.CutSuffix(name, a.suffix); ok {
		if sym := s.symbols[base]; sym != nil {
			return sym, nil
		}
	}
	return nil, errInvalidRequest("unknown symbol %q", name)
}

// openLocked executes a market order on a.
func (s *Server) openLocked(a *account, now time.Time, o openOrder) (outcome, error) {
	sym, err := s.resolve(a, o.symbol)
	if err != nil {
		return outcome{}, err
	}
	if !o.side.Valid() {
		return outcome{}, errInvalidRequest("invalid side %d", o.side)
	}
	if err := sym.tradable(); err != nil {
		return outcome{}, err
	}
	vol, err := checkVolume(sym.cfg, o.volume)
	if err != nil {
		return outcome{}, err
	}
	bid, ask := sym.quote(now)
	price, ref := ask, bid
	if o.side == broker.Sell {
		price, ref = bid, ask
	}
	if w := sym.roundPrice(o.worst); o.worst > 0 && (o.side == broker.Buy && price > w || o.side == broker.Sell && price < w) {
		return outcome{}, errPriceBeyond(o.side, price, w)
	}
	sl, tp := sym.roundPrice(o.sl), sym.roundPrice(o.tp)
	if err := checkStops(o.side, sl, tp, ref); err != nil {
		return outcome{}, err
	}
	o.comment = truncateComment(o.comment)
	if a.mode == broker.Netting {
		if p := a.bySymbolLocked(o.symbol); p != nil {
			return s.netLocked(a, now, p, o, vol, price, sl, tp)
		}
	}
	if err := s.checkMarginLocked(a, s.margin(a, sym, vol, price, now), 0, now); err != nil {
		return outcome{}, err
	}
	p := s.newPositionLocked(a, sym, now, o, vol, price, sl, tp)
	return outcome{
		result: broker.OrderResult{Ticket: p.Ticket, Price: price, Volume: vol, ServerTime: now},
		pos:    p.Position,
		ev:     [2]broker.Event{{Kind: broker.Opened, Position: p.Position}}, nev: 1,
	}, nil
}

// newPositionLocked adds a position with a fresh ticket to a.
func (s *Server) newPositionLocked(a *account, sym *symbol, now time.Time, o openOrder, vol, price, sl, tp float64) *position {
	p := &position{
		Position: broker.Position{
			Ticket:    s.tickets.Add(1),
			Symbol:    o.symbol,
			Side:      o.side,
			Volume:    vol,
			OpenPrice: price,
			SL:        sl,
			TP:        tp,
			Magic:     o.magic,
			Comment:   o.comment,
			OpenTime:  now,
		},
		sym: sym,
	}
	a.positions = append(a.positions, p)
	return p
}

// netLocked applies an order to the open position p of a netting account: the same side
// adds volume at the weighted open price; the other side reduces, closes, or closes and
// reverses (a new position with a new ticket for the rest).
func (s *Server) netLocked(a *account, now time.Time, p *position, o openOrder, vol, price, sl, tp float64) (outcome, error) {
	step := p.sym.cfg.LotStep
	result := broker.OrderResult{Ticket: p.Ticket, Price: price, Volume: vol, ServerTime: now}
	switch {
	case p.Side == o.side:
		if err := s.checkMarginLocked(a, s.margin(a, p.sym, vol, price, now), 0, now); err != nil {
			return outcome{}, err
		}
		total := normLots(p.Volume+vol, step)
		p.OpenPrice = p.sym.roundPrice((p.OpenPrice*p.Volume + price*vol) / total)
		p.Volume = total
		if sl != 0 {
			p.SL = sl
		}
		if tp != 0 {
			p.TP = tp
		}
		return outcome{result: result, pos: p.Position, ev: [2]broker.Event{{Kind: broker.Modified, Position: p.Position}}, nev: 1}, nil

	case sameLots(vol, p.Volume, step):
		s.realiseLocked(a, p, p.Volume, price, now)
		a.removeLocked(p)
		return outcome{result: result, pos: p.Position, ev: [2]broker.Event{{Kind: broker.Closed, Position: p.Position}}, nev: 1}, nil

	case vol < p.Volume:
		s.realiseLocked(a, p, vol, price, now)
		p.Volume = normLots(p.Volume-vol, step)
		s.partialCommentLocked(p)
		return outcome{result: result, pos: p.Position, ev: [2]broker.Event{{Kind: broker.PartiallyClosed, Position: p.Position}}, nev: 1}, nil
	}

	rest := normLots(vol-p.Volume, step)
	release := s.margin(a, p.sym, p.Volume, p.OpenPrice, now)
	if err := s.checkMarginLocked(a, s.margin(a, p.sym, rest, price, now), release, now); err != nil {
		return outcome{}, err
	}
	s.realiseLocked(a, p, p.Volume, price, now)
	a.removeLocked(p)
	q := s.newPositionLocked(a, p.sym, now, o, rest, price, sl, tp)
	result.Ticket = q.Ticket
	return outcome{
		result: result,
		pos:    q.Position,
		ev:     [2]broker.Event{{Kind: broker.Closed, Position: p.Position}, {Kind: broker.Opened, Position: q.Position}}, nev: 2,
	}, nil
}

// closeLocked closes volume lots (0 = all) of the position with ticket.
func (s *Server) closeLocked(a *account, now time.Time, ticket int64, volume float64) (outcome, error) {
	p := a.findLocked(ticket)
	if p == nil {
		return outcome{}, errInvalidRequest("unknown ticket %d", ticket)
	}
	if err := p.sym.tradable(); err != nil {
		return outcome{}, err
	}
	c := p.sym.cfg
	vol := p.Volume
	if volume != 0 {
		v, err := checkVolume(c, volume)
		if err != nil {
			return outcome{}, err
		}
		if v > p.Volume && !sameLots(v, p.Volume, c.LotStep) {
			return outcome{}, errInvalidVolume("volume %v exceeds the %v lots of position %d", v, p.Volume, ticket)
		}
		if rest := p.Volume - v; !sameLots(v, p.Volume, c.LotStep) && rest < c.MinLot-c.LotStep*stepTolerance {
			return outcome{}, errInvalidVolume("closing %v of %v lots would leave less than the minimum %v", v, p.Volume, c.MinLot)
		}
		vol = min(v, p.Volume)
	}
	price := p.sym.closePrice(p.Side, now)
	s.realiseLocked(a, p, vol, price, now)
	result := broker.OrderResult{Ticket: ticket, Price: price, Volume: vol, ServerTime: now}
	if sameLots(vol, p.Volume, c.LotStep) {
		a.removeLocked(p)
		return outcome{result: result, pos: p.Position, ev: [2]broker.Event{{Kind: broker.Closed, Position: p.Position}}, nev: 1}, nil
	}
	p.Volume = normLots(p.Volume-vol, c.LotStep)
	s.partialCommentLocked(p)
	return outcome{result: result, pos: p.Position, ev: [2]broker.Event{{Kind: broker.PartiallyClosed, Position: p.Position}}, nev: 1}, nil
}

// partialCommentLocked rewrites the comment of a partly closed position when configured.
func (s *Server) partialCommentLocked(p *position) {
	if s.cfg.OverwriteCommentOnPartialClose {
		p.Comment = truncateComment(fmt.Sprintf("from #%d", p.Ticket))
	}
}

// modifyLocked sets SL and TP of the position with ticket. Setting the values it already
// has succeeds without an event.
func (s *Server) modifyLocked(a *account, now time.Time, ticket int64, sl, tp float64) (outcome, error) {
	p := a.findLocked(ticket)
	if p == nil {
		return outcome{}, errInvalidRequest("unknown ticket %d", ticket)
	}
	if err := p.sym.tradable(); err != nil {
		return outcome{}, err
	}
	sl, tp = p.sym.roundPrice(sl), p.sym.roundPrice(tp)
	if err := checkStops(p.Side, sl, tp, p.sym.closePrice(p.Side, now)); err != nil {
		return outcome{}, err
	}
	result := broker.OrderResult{Ticket: ticket, ServerTime: now}
	if p.SL == sl && p.TP == tp {
		return outcome{result: result, pos: p.Position}, nil
	}
	p.SL, p.TP = sl, tp
	return outcome{result: result, pos: p.Position, ev: [2]broker.Event{{Kind: broker.Modified, Position: p.Position}}, nev: 1}, nil
}
