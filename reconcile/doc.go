// Package reconcile is the copier's pure planning core: link settings (sizing, symbol
// mapping, filters, reverse copying, SL/TP policy, limits, opening window), the copy marker
// carried in order comments, and the planner that compares a master account with one of its
// followers and returns the orders that bring the follower in line.
//
// Everything here is a plain function of its arguments: no database, no actors, no network,
// no clock (the caller passes Now). The engine calls Plan after a gap, a takeover or an
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
// that was already executed is never repeated (the target is absolute, not a delta), and a
// netting follower can sum the targets of several master positions. Actions that open or
// re-point copies carry Track items, and Result carries Track and Untrack lists, that keep
// the map in line (see Result).
//
// An entry whose follower position no longer exists while its master position is still open
// is a tombstone: the copy was closed on the follower (by hand, by its stop-loss, by a stop
// out) and the planner does not open it again. Keep passing such entries until the planner
// lists them in Result.Untrack (it does once the master position has closed).
//
// # Output
//
// Plans are deterministic: the same Input gives the same Result whatever the order of the
// positions in it. Actions are ordered Close, PartialClose, Modify, Open (freeing margin and
// limits first), and within a kind by master open time, master ticket and follower ticket.
// Applying a plan and planning again yields no action.
package reconcile
