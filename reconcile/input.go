package reconcile

import (
	"time"

	"github.com/snapcopier/copier/broker"
)

// Link is one master→follower copy link (a copy_links row).
type Link struct {
	// ID is the copy_links row id.
	ID int64
	// Magic is the magic number of every copy the link opens; it must be non-zero and
	// unique among the links of one follower, or links would take each other's copies.
	Magic int64
	// Settings are the link's parsed settings.
	Settings Settings
	// valid is set by Validated: the settings passed Validate once, so plans do not run it
	// again (the event path plans once per master event and follower).
	valid bool
}

// Validated returns l marked as validated when its settings are valid, or the validation
// error. A plan of a validated link skips Settings.Validate; one of any other link runs it.
// Changing the settings of a validated link must keep them valid (the engine only moves
// Protect.CloseOnly between valid modes).
func (l Link) Validated() (Link, error) {
	if err := l.Settings.Validate(); err != nil {
		return l, err
	}
	l.valid = true
	return l, nil
}

// TicketMapEntry is one row of the ticket map (copy_positions): the follower position that
// copies a master position through a link. The engine keeps at most one entry per
// (LinkID, MasterTicket); several master tickets may share a follower ticket on a netting
// follower.
type TicketMapEntry struct {
	LinkID         int64 // the link
	MasterTicket   int64 // the master position
	FollowerTicket int64 // its copy (on a netting follower 0: carried by a flat net)
	// Volume is the copy ratio: follower lots per master lot, fixed when the copy was
	// opened (the copy's volume ÷ the master's volume at that moment). The copy's target
	// volume is Volume × the master's current volume, so a master partial close is mirrored
	// proportionally and idempotently: the target is absolute, a reduction already done is
	// not repeated, and nothing needs rewriting after a partial close. A copy of 0.5 lots
	// of a 2-lot master position has Volume 0.25; when the master is reduced to 1.2 lots the
	// copy's target is 0.3 lots. Volume ≤ 0 means unknown: the planner re-derives it from
	// the copy's volume (no reduction that round) and tracks the entry again.
	Volume float64
}

// AccountState is one account as the planner sees it.
type AccountState struct {
	// Info carries balance, equity and (for the follower) the account mode.
	Info broker.AccountInfo
	// Positions are the account's open positions.
	Positions []broker.Position
	// Symbols are the account's symbol specs by name.
	Symbols map[string]broker.SymbolSpec
	// QuotesAt is when the Bid and Ask in Symbols were read, on Input.Now's clock. A plan
	// more than QuoteMaxAge later treats them as unknown: the follower's price it compares
	// a late copy with (Window.MaxDeviationPoints) and bases stops and risk sizing on must be
	// the market's, not that of the last symbol read (minutes or hours ago on the event
	// path). Zero: read with the plan (a caller that plans on symbols it just read).
	QuotesAt time.Time
}

// QuoteMaxAge is how old a follower's quote may be and still count as its current price.
// It also bounds the copies the quote matters for: a copy later than this after its master
// position opened, with a price-deviation bound and only an older quote, is skipped with
// SkipQuoteStale, which asks the engine to read the follower's symbols again and plan.
const QuoteMaxAge = 2 * time.Second

// Input is everything one plan looks at: one link, its master and its follower.
type Input struct {
	Master   AccountState // the link's master
	Follower AccountState // the follower (Info.Mode: hedging or netting)
	Link     Link         // the link planned
	// TicketMap holds the entries of this link (others are ignored): every entry the
	// engine has not yet seen in a Result.Untrack, including those whose copy is gone.
	TicketMap []TicketMapEntry
	// Restrict is what the follower's and the link's protections allow: new copies, none,
	// or none and the link's copies closed.
	Restrict Restriction
	// Now is the current time on the node's clock (the clock of Follower.QuotesAt).
	Now time.Time
	// MasterClock is how far the master's trade server clock runs ahead of Now's clock
	// (negative: behind), as its feed shows it. Master positions' OpenTimes are on the
	// server's clock: a position's age is Now − OpenTime + MasterClock, for the opening
	// window and a copy's lateness. Zero: one clock, or not known yet.
	MasterClock time.Duration
	// ActionRoom is room the plan may append its actions to (Result.Actions then shares
	// its array; its length is ignored): a caller that plans on every event lends the
	// array of a plan it is done with. Nil: a new array.
	ActionRoom []Action
}

// masterAge is how long ago the master opened m, on Now's clock.
func (in *Input) masterAge(m *broker.Position) time.Duration {
	return in.Now.Sub(m.OpenTime) + in.MasterClock
}

// Result is a plan.
type Result struct {
	// Actions are the orders to send, in order.
	Actions []Action
	// Skipped lists the positions left alone, and why.
	Skipped []Skip
	// Track lists ticket map entries to write now (upsert on LinkID, MasterTicket): copies
	// found by their marker, re-pointed after a duplicate, or carried by a netting position
	// that needs no order. Changes that depend on an order's outcome come from
	// Action.MapChanges instead.
	Track []TicketMapEntry
	// Untrack lists ticket map entries to drop (mark closed): their master position is
	// closed and their copy is gone (on a netting follower: their master position is closed).
	Untrack []TicketMapEntry
}

// NeedsQuote reports whether a copy waits for a current quote of the follower
// (SkipQuoteStale): the engine reads the follower's symbols again and plans.
func (r Result) NeedsQuote() bool {
	for _, s := range r.Skipped {
		if s.Reason == SkipQuoteStale {
			return true
		}
	}
	return false
}

// Converged reports whether the plan asks for nothing: no action and no ticket map change.
func (r Result) Converged() bool {
	return len(r.Actions) == 0 && len(r.Track) == 0 && len(r.Untrack) == 0
}
