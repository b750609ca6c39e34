package reconcile

import (
	"fmt"
	"strconv"

	"github.com/snapcopier/copier/broker"
)

// ActionKind is what an action does to the follower.
type ActionKind int8

const (
	// Open opens a position (on a netting follower it may add to the symbol's position).
	Open ActionKind = iota + 1
	// Close closes a position in full.
	Close
	// PartialClose closes Volume lots of a position.
	PartialClose
	// Modify sets a position's SL and TP.
	Modify
)

// String returns "open", "close", "partial_close" or "modify".
func (k ActionKind) String() string {
	switch k {
	case Open:
		return "open"
	case Close:
		return "close"
	case PartialClose:
		return "partial_close"
	case Modify:
		return "modify"
	}
	return fmt.Sprintf("ActionKind(%d)", int8(k))
}

// order is the position of the kind in a plan: closes first (they free margin and limits),
// opens last.
func (k ActionKind) order() int {
	switch k {
	case Close:
		return 0
	case PartialClose:
		return 1
	case Modify:
		return 2
	}
	return 3
}

// Reason is why an action was planned.
type Reason int8

const (
	// ReasonCopyMissing: a master position that should be copied has no copy.
	ReasonCopyMissing Reason = iota + 1
	// ReasonMasterClosed: the copy's master position is closed (an orphan).
	ReasonMasterClosed
	// ReasonDuplicate: a master position has more than one copy; the oldest is kept.
	ReasonDuplicate
	// ReasonMasterReduced: the master position was partially closed; the copy is reduced
	// proportionally.
	ReasonMasterReduced
	// ReasonRemainderBelowMin: the master position was partially closed and the proportional
	// remainder of the copy is below the minimum volume, so the copy is closed.
	ReasonRemainderBelowMin
	// ReasonStops: the copy's SL or TP differs from what the link's policy wants.
	ReasonStops
	// ReasonNetTarget: a netting follower's position on a symbol differs from the net of
	// the master positions it copies.
	ReasonNetTarget
	// ReasonProtection: a protection (stop-out or close-only mode) closes the link's copies
	// (Input.Restrict is CloseCopies).
	ReasonProtection
)

// String returns the reason's snake_case name.
func (r Reason) String() string {
	switch r {
	case ReasonCopyMissing:
		return "copy_missing"
	case ReasonMasterClosed:
		return "master_closed"
	case ReasonDuplicate:
		return "duplicate"
	case ReasonMasterReduced:
		return "master_reduced"
	case ReasonRemainderBelowMin:
		return "remainder_below_min"
	case ReasonStops:
		return "stops"
	case ReasonNetTarget:
		return "net_target"
	case ReasonProtection:
		return "protection"
	}
	return fmt.Sprintf("Reason(%d)", int8(r))
}

// Tracked is one master position a follower position carries once an action has executed:
// the engine writes TicketMapEntry{LinkID, MasterTicket, <the position's ticket>, Ratio}.
type Tracked struct {
	// MasterTicket is the master position carried.
	MasterTicket int64
	// Ratio is the copy ratio, follower lots per master lot (TicketMapEntry.Volume).
	Ratio float64
}

// Entry returns the ticket map entry of t for a link and the follower position's ticket.
func (t Tracked) Entry(linkID, followerTicket int64) TicketMapEntry {
	return TicketMapEntry{LinkID: linkID, MasterTicket: t.MasterTicket, FollowerTicket: followerTicket, Volume: t.Ratio}
}

// Action is one order a plan asks the engine to send to the follower.
type Action struct {
	Kind   ActionKind // what to do
	Reason Reason     // why
	// MasterTicket is the master position the action serves. On a netting follower, a
	// reduction may serve several (or closed) master positions and names none (0), or the
	// event's master position on the event path.
	MasterTicket int64
	// FollowerTicket is the position closed, reduced or modified; for an Open on a netting
	// follower that adds to the symbol's position, that position; else 0.
	FollowerTicket int64
	// Symbol is the follower symbol.
	Symbol string
	// Side is the side to open (Open) or the position's side.
	Side broker.Side
	// Volume is the volume to open (Open), to close (PartialClose) or the position's volume
	// (Close). Always on the follower symbol's lot step.
	Volume float64
	// SL and TP are the stops to open with (Open) or to set (Modify); 0 = none.
	SL, TP float64
	// Magic marks an opened copy: the link's magic number.
	Magic int64
	// Comment marks an opened copy: Marker(MasterTicket).
	Comment string
	// Price is the price an Open expects: the follower's Ask (buy) or Bid (sell) when known,
	// else the master's open price. For slippage metrics; the order is a market order.
	Price float64
	// WorstPrice is the worst fill an Open accepts (broker.OpenRequest.WorstPrice): the
	// link's price-deviation bound from the master's open price, 0 without one.
	WorstPrice float64
	// Track lists the master positions the follower position carries after this action.
	// When the action succeeds the engine writes, for each, Tracked.Entry(link, ticket),
	// replacing the map entry of that master ticket; ticket is the position the order result
	// names, or 0 after a Close (on a netting follower: the master positions are still
	// copied, but their net is flat). MapChanges applies these rules.
	Track []Tracked
	// Untrack asks the engine to drop the ticket map entry of (link, MasterTicket) when the
	// action succeeds: set on the Close of an orphan copy that the map points at (its master
	// position is closed, the entry has no further use). MapChanges applies it.
	Untrack bool
}

// Summary is what an action's description (String) shows: the account's journal keeps
// it in place of the text, formatted only when the journal is read, instead of a string
// built on every order.
type Summary struct {
	Kind           ActionKind
	Reason         Reason
	Side           broker.Side
	MasterTicket   int64
	FollowerTicket int64
	Symbol         string
	Volume, SL, TP float64
}

// Summary returns the part of a that its description shows.
func (a Action) Summary() Summary {
	return Summary{Kind: a.Kind, Reason: a.Reason, Side: a.Side, MasterTicket: a.MasterTicket, FollowerTicket: a.FollowerTicket,
		Symbol: a.Symbol, Volume: a.Volume, SL: a.SL, TP: a.TP}
}

// String describes the action for logs and the account's journal.
func (a Action) String() string { return a.Summary().String() }

// String describes the action as fmt's %v would print it, built with strconv in one
// allocation: Sprintf cost a dozen.
func (a Summary) String() string {
	b := make([]byte, 0, 96)
	switch a.Kind {
	case Open:
		b = append(b, "open "...)
		b = a.sideSymbolVolume(b)
		b = a.masterReason(b)
		b = a.stops(b)
	case Modify:
		b = append(b, "modify #"...)
		b = strconv.AppendInt(b, a.FollowerTicket, 10)
		b = append(b, ' ')
		b = append(b, a.Symbol...)
		b = a.stops(b)
		b = a.masterReason(b)
	default:
		b = append(b, a.Kind.String()...)
		b = append(b, " #"...)
		b = strconv.AppendInt(b, a.FollowerTicket, 10)
		b = append(b, ' ')
		b = a.sideSymbolVolume(b)
		b = a.masterReason(b)
	}
	return string(b)
}

func (a Summary) sideSymbolVolume(b []byte) []byte {
	b = append(b, a.Side.String()...)
	b = append(b, ' ')
	b = append(b, a.Symbol...)
	b = append(b, ' ')
	return strconv.AppendFloat(b, a.Volume, 'g', -1, 64)
}

func (a Summary) masterReason(b []byte) []byte {
	b = append(b, " (master "...)
	b = strconv.AppendInt(b, a.MasterTicket, 10)
	b = append(b, ", "...)
	b = append(b, a.Reason.String()...)
	return append(b, ')')
}

func (a Summary) stops(b []byte) []byte {
	b = append(b, " sl="...)
	b = strconv.AppendFloat(b, a.SL, 'g', -1, 64)
	b = append(b, " tp="...)
	return strconv.AppendFloat(b, a.TP, 'g', -1, 64)
}

// MapChanges returns the ticket map changes an action makes once it has succeeded with
// result r: the entries to write (upsert on LinkID, MasterTicket: Track, pointed at the
// position the result names, or at 0 after a Close) and the entries to drop (Untrack).
func (a Action) MapChanges(linkID int64, r broker.OrderResult) (track, untrack []TicketMapEntry) {
	ticket := a.FollowerTicket
	switch {
	case a.Kind == Close:
		ticket = 0
	case a.Kind == Open && r.Ticket != 0:
		ticket = r.Ticket
	}
	for _, t := range a.Track {
		track = append(track, t.Entry(linkID, ticket))
	}
	if a.Untrack {
		untrack = []TicketMapEntry{{LinkID: linkID, MasterTicket: a.MasterTicket, FollowerTicket: a.FollowerTicket}}
	}
	return track, untrack
}

// UnknownOutcomeChanges returns the ticket map changes to write when the action's outcome
// is unknown (a timeout: it may or may not have executed) on a follower of the given mode.
// On a netting follower they are the action's changes as if it executed with no ticket
// known: entries pointing at 0 or at the symbol's position are carried by whatever
// position the link then holds, so the next plan is right either way, whereas the old
// entries would point at a position an executed close removed, which the planner must take
// for a copy the user closed. On a hedging follower there are none: a copy that was opened
// is found by its marker, and an entry written for an open that did not execute would be
// taken for a closed copy.
func (a Action) UnknownOutcomeChanges(linkID int64, mode broker.AccountMode) (track, untrack []TicketMapEntry) {
	if mode != broker.Netting {
		return nil, nil
	}
	return a.MapChanges(linkID, broker.OrderResult{})
}

// OpenRequest returns the request of an Open action.
func (a Action) OpenRequest(o broker.Order) broker.OpenRequest {
	return broker.OpenRequest{Order: o, Symbol: a.Symbol, Side: a.Side, Type: broker.Market,
		Volume: a.Volume, SL: a.SL, TP: a.TP, Magic: a.Magic, Comment: a.Comment, WorstPrice: a.WorstPrice}
}

// CloseRequest returns the request of a Close (Volume 0: the whole position) or
// PartialClose action.
func (a Action) CloseRequest(o broker.Order) broker.CloseRequest {
	r := broker.CloseRequest{Order: o, Ticket: a.FollowerTicket}
	if a.Kind == PartialClose {
		r.Volume = a.Volume
	}
	return r
}

// ModifyRequest returns the request of a Modify action.
func (a Action) ModifyRequest(o broker.Order) broker.ModifyRequest {
	return broker.ModifyRequest{Order: o, Ticket: a.FollowerTicket, SL: a.SL, TP: a.TP}
}
