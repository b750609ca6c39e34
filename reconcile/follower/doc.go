// Package follower is the copy logic of one follower account as a pure state machine, in
// the shape of raft's Step/Ready: the AccountActor (package actors) turns its messages into
// inputs (a loaded configuration, a master's feed attaching, a master event, a reconcile's
// answer, an order's outcome, a tick, an equity reading), calls the Core's method for each,
// and carries out the Ready it returns (orders to send, a reconcile to ask for, ticket-map,
// status and protection rows to write, journal entries, notes for logs and metrics).
//
// The Core does no I/O, reads no clock and sleeps nowhere: every input carries the time,
// and the inputs that may ask for a reconcile carry whether the account's lease was held
// (At). Pauses are effects (Ready.RetryLoadIn, RepairIn, ResendIn) whose end is an input.
// What a broker error means is decided in one place (FailureOf), and what follows from it
// here. Its table and scenario tests (testdata/*.txt) run without a database or an actor
// system.
//
// # Ordering rules
//
//   - Send, RaiseToken and ReadPositions are synchronous: the caller carries out the one a
//     Ready names before anything else and steps its outcome (OrderDone, TokenDone,
//     PositionsRead); only then may another input be stepped. An order refused for now
//     (FailRetryable) is the one pause: OrderDone answers ResendIn, other inputs may be
//     stepped while it waits, and ResendDue sends it again. Meanwhile nothing starts
//     another order or a reconcile: what they ask for is taken up when the run ends. A
//     reload gives the waiting order up (its plan was made under the old links), and so
//     does ResendDue after a stop-out started or ended.
//   - Tickets are written in the order given and before the next Ready's; a ticket change
//     that an order's outcome makes comes in the Ready that steps the outcome.
//   - An order is sent only while its lease is held: the caller checks the gate immediately
//     before every attempt and steps OrderDone{Dropped: true} when it is closed.
//   - A plan made before a stop-out started or ended is never carried out (the protection
//     generation); a reconcile is never started in the middle of carrying out another's
//     plan (Repair is a later input, not a nested call).
package follower
