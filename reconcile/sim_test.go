package reconcile

import (
	"math"
	"slices"
	"time"

	"github.com/snapcopier/copier/broker"
)

// follower is a simulated follower account: it executes plans the way a MetaTrader 5
// server would (hedging: every open is a new position; netting: one position per symbol,
// additions average the open price), and keeps the engine's ticket map.
type follower struct {
	mode       broker.AccountMode
	positions  []broker.Position
	ticketMap  []TicketMapEntry
	nextTicket int64
}

// execute carries out a plan of link at time now, as the engine would: every action in
// order, applying its MapChanges, then Result.Track and Result.Untrack.
func (f *follower) execute(linkID int64, res Result, now time.Time) {
	for _, a := range res.Actions {
		ticket := f.do(a, now)
		track, untrack := a.MapChanges(linkID, broker.OrderResult{Ticket: ticket, Volume: a.Volume})
		for _, e := range track {
			f.upsert(e)
		}
		for _, e := range untrack {
			f.drop(e.LinkID, e.MasterTicket)
		}
	}
	for _, e := range res.Track {
		f.upsert(e)
	}
	for _, e := range res.Untrack {
		f.drop(e.LinkID, e.MasterTicket)
	}
}

// drop deletes the entry of (linkID, masterTicket).
func (f *follower) drop(linkID, masterTicket int64) {
	f.ticketMap = slices.DeleteFunc(f.ticketMap, func(x TicketMapEntry) bool {
		return x.LinkID == linkID && x.MasterTicket == masterTicket
	})
}

// executeLost carries out a plan's orders but loses every ticket map write, as an engine
// that crashes after sending them would.
func (f *follower) executeLost(res Result, now time.Time) {
	for _, a := range res.Actions {
		f.do(a, now)
	}
}

// executeTwice carries out a plan, then sends its opens a second time without recording
// them, as a stale owner that still holds the plan would.
func (f *follower) executeTwice(linkID int64, res Result, now time.Time) {
	f.execute(linkID, res, now)
	for _, a := range res.Actions {
		if a.Kind == Open {
			f.do(a, now)
		}
	}
}

// upsert replaces the entry of (LinkID, MasterTicket).
func (f *follower) upsert(e TicketMapEntry) {
	f.ticketMap = slices.DeleteFunc(f.ticketMap, func(x TicketMapEntry) bool {
		return x.LinkID == e.LinkID && x.MasterTicket == e.MasterTicket
	})
	f.ticketMap = append(f.ticketMap, e)
}

func (f *follower) newTicket() int64 {
	if f.nextTicket == 0 {
		f.nextTicket = 900_000
	}
	f.nextTicket++
	return f.nextTicket
}

func (f *follower) find(ticket int64) int {
	return slices.IndexFunc(f.positions, func(p broker.Position) bool { return p.Ticket == ticket })
}

// do executes one action and returns the ticket of the position it leaves (0: none).
func (f *follower) do(a Action, now time.Time) int64 {
	switch a.Kind {
	case Open:
		if f.mode == broker.Netting {
			if i := slices.IndexFunc(f.positions, func(p broker.Position) bool { return p.Symbol == a.Symbol }); i >= 0 {
				return f.netDeal(i, a, now)
			}
		}
		p := broker.Position{Ticket: f.newTicket(), Symbol: a.Symbol, Side: a.Side, Volume: a.Volume,
			OpenPrice: a.Price, SL: a.SL, TP: a.TP, Magic: a.Magic, Comment: a.Comment, OpenTime: now}
		f.positions = append(f.positions, p)
		return p.Ticket
	case Close:
		if i := f.find(a.FollowerTicket); i >= 0 {
			f.positions = slices.Delete(f.positions, i, i+1)
		}
		return 0
	case PartialClose:
		if i := f.find(a.FollowerTicket); i >= 0 {
			f.positions[i].Volume = lots(f.positions[i].Volume - a.Volume)
			if f.positions[i].Volume <= 0 {
				f.positions = slices.Delete(f.positions, i, i+1)
				return 0
			}
		}
		return a.FollowerTicket
	case Modify:
		if i := f.find(a.FollowerTicket); i >= 0 {
			f.positions[i].SL, f.positions[i].TP = a.SL, a.TP
		}
		return a.FollowerTicket
	}
	return 0
}

// netDeal applies an Open to the netting position at i: an addition averages the price and
// takes the deal's stops; an opposite deal reduces, closes or reverses (new ticket).
func (f *follower) netDeal(i int, a Action, now time.Time) int64 {
	p := &f.positions[i]
	if p.Side == a.Side {
		p.OpenPrice = (p.Volume*p.OpenPrice + a.Volume*a.Price) / (p.Volume + a.Volume)
		p.Volume = lots(p.Volume + a.Volume)
		p.SL, p.TP = a.SL, a.TP
		return p.Ticket
	}
	switch rest := lots(a.Volume - p.Volume); {
	case rest < 0:
		p.Volume = lots(-rest)
		return p.Ticket
	case rest == 0:
		f.positions = slices.Delete(f.positions, i, i+1)
		return 0
	default:
		*p = broker.Position{Ticket: f.newTicket(), Symbol: a.Symbol, Side: a.Side, Volume: rest,
			OpenPrice: a.Price, SL: a.SL, TP: a.TP, Magic: p.Magic, Comment: p.Comment, OpenTime: now}
		return p.Ticket
	}
}

// lots rounds away binary noise from a volume.
func lots(v float64) float64 { return math.Round(v*1e8) / 1e8 }
