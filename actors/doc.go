// Package actors is the copier engine on protoactor-go: the Supervisor that keeps one
// AccountActor per owned follower and one MasterFeed per needed master, the AccountActor
// that copies a master's trades to its follower, the Reconciler that fetches accounts and
// plans with bounded concurrency and rate, the StatusWriter that batches fenced status and
// ticket-map writes, and Node, the embeddable entry point that wires them with the
// LeaseKeeper (package leasekeeper).
//
// The AccountActor is a translator: the copy logic is the pure follower.Core (package
// reconcile/follower), and the actor turns messages into its inputs and carries out what
// it returns — checking its lease gate immediately before every order, and bounding each
// broker request by the trust that check granted (its token, context deadline and carried
// deadline come from one gate ticket).
//
//	Node ─┬─ LeaseKeeper ──(Owned)──▶ Supervisor ─┬─ AccountActor (per follower) ◀── MasterFeed (per master)
//	      ├─ Reconciler ◀──── asks ───────────────┘        │ gate before every order
//	      └─ StatusWriter ◀─── fenced batches ─────────────┘
//
// No actor blocks on another: results of database and broker work that must not hold a
// mailbox come back as messages; ticks come from goroutines the actors own. No mailbox
// sleeps: the Core's pauses (a load retry, a repair's backoff, the resend of an order
// refused for now) are timers whose end is a message.
package actors
