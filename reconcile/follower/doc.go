// Package follower is the copy logic of one follower account as a pure state machine, in
// the shape of raft's Step/Ready: the AccountActor (package actors) turns its messages into
// inputs (a loaded configuration, a master's feed attaching, a master event, a reconcile's
// answer, an order's outcome, a tick, an equity reading), calls the Core's method for each,
// and carries out the Ready it returns (orders to send, a reconcile to ask for, ticket-map,
// status and protection rows to write, journal entries, notes for logs and metrics).
//
// The Core does no I/O and reads no clock: every input carries the time, and whether the
// account's lease is held is asked of the Lease function it is built with. Its table
// tests run without a database or an actor system.
//
// # Ordering rules
//
//   - Send, RaiseToken and ReadPositions are synchronous: the caller carries out the one a
//     Ready names before anything else and steps its outcome (OrderDone, TokenDone,
//     PositionsRead); only then may another input be stepped.
//   - Tickets are written in the order given and before the next Ready's; a ticket change
//     that an order's outcome makes comes in the Ready that steps the outcome.
//   - An order is sent only while its lease is held: the caller checks the gate immediately
//     before every attempt and steps OrderDone{Dropped: true} when it is closed.
//   - A plan made before a stop-out started or ended is never carried out (the protection
//     generation); a reconcile is never started in the middle of carrying out another's
//     plan (Repair is a later input, not a nested call).
package follower
