// Package reconcile is the copier's pure planning core: link settings (sizing, symbol
// mapping, filters, reverse copying, SL/TP policy, limits, opening window), the copy marker
// carried in order comments, and the planner that compares a master account with one of its
// followers and returns the orders that bring the follower in line.
//
// The planning core is a set of plain functions of their arguments: no database, no
// actors, no network, no clock (the caller passes Now); it imports only the broker's
// types. The follower's state machine that drives it is package reconcile/follower; the
// Reconciler actor that fetches positions and calls Plan is in package actors. The engine
// calls Plan after a gap, a takeover or an
// unknown order outcome (the repair path) and PlanEvent for each in-order master event (the
// fast path); both apply one set of rules, so the fast path can never do what a reconcile
// would undo.
//
// # Matching copies
//
// A follower position is a copy of a master position of a link when
//
//  1. the link's ticket map has an entry for it (the map wins: servers overwrite comments),
//     and the position carries the link's magic number; or
//  2. it carries the link's magic number and its comment starts with the marker
//     mc<masterTicket> (see Marker and ParseMarker).
//
// A position without the link's magic number is never touched: manual trades and other
// links' copies are invisible to the plan. On a netting follower, where one position per
// symbol aggregates every copy, the position of a symbol that carries the link's magic is
// the link's net position on that symbol.
//
// # The ticket map
//
// The engine keeps one TicketMapEntry per (link, master ticket). Its Volume is the copy
// ratio: follower lots per master lot, fixed when the copy was opened. The target volume
// of a copy is always ratio × the master's current volume (rounded down to the follower's
// lot step), so a partial close on the master is mirrored proportionally, a partial close
// that was already executed is never repeated (the target is absolute, not a delta, so an
// order whose outcome was unknown cannot be applied twice), and a netting follower can sum
// the targets of several master positions.
//
// The plan says how to keep the map in line: Result.Track and Result.Untrack are written at
// once; each Action's changes (Action.MapChanges) are written when the action succeeds.
// Pass every entry of the link that has not been untracked.
//
// An entry whose follower position no longer exists while its master position is still open
// is a tombstone: the copy was closed on the follower (by hand, by its stop-loss, by a stop
// out) and the planner does not open it again (SkipCopyClosed). Keep passing such entries
// until the planner untracks them, which it does once the master position has closed. On a
// netting follower an entry with FollowerTicket 0 is not a tombstone: it says that the
// master position is copied but the net of the link's copies on that symbol is flat (or,
// when the link holds a position there, that the write of the order that opened it was
// lost). An entry that points where the entry of the master named by the position's marker
// points is carried by the position too (the open's write was lost); the planner tracks
// such entries at the position again. On a netting follower an order whose outcome is
// unknown should have its Action.UnknownOutcomeChanges written.
//
// # Restrictions
//
// Input.Restrict carries what the follower's protections (package reconcile/protect)
// allow. NoNewCopies skips every master position without a copy (SkipRestricted) and
// otherwise plans as usual: copies still close, shrink and follow the stops of their
// masters. CloseCopies closes every position of the link's magic number (ReasonProtection),
// identified or not, and keeps the entries of the master positions still open, pointed at
// the closed copies (on a netting follower, entries at 0 on a flat symbol at
// FlatTombstone): they become tombstones, so lifting the restriction never copies again a
// master position whose copy it closed, and a flat netting pair whose one side closes opens
// nothing.
//
// # Output
//
// Plans are deterministic: the same Input gives the same Result whatever the order of the
// positions and entries in it. Actions are ordered Close, PartialClose, Modify, Open (closes
// free margin and limits first); within a kind they follow the master positions oldest first
// (OpenTime, then ticket), then closed master tickets by ticket, and on a netting follower
// the symbols by name. Applying a plan and planning again yields nothing to do
// (Result.Converged).
package reconcile
