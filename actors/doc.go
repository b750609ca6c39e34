// Package actors is the copier engine on protoactor-go: the Supervisor that keeps one
// AccountActor per owned follower and one MasterFeed per needed master, the AccountActor
// that copies a master's trades to its follower (checking its lease gate immediately before
// every order, and bounding each broker request by the trust that check granted: its
// token, context deadline and carried deadline come from one gate ticket), the StatusWriter that batches fenced status and ticket-map writes, and
// Node, the embeddable entry point that wires them with the LeaseKeeper
// (package leasekeeper) and the Reconciler (package reconcile).
//
//	Node ─┬─ LeaseKeeper ──(Owned)──▶ Supervisor ─┬─ AccountActor (per follower) ◀── MasterFeed (per master)
//	      ├─ Reconciler ◀──── asks ───────────────┘        │ gate before every order
//	      └─ StatusWriter ◀─── fenced batches ─────────────┘
//
// No actor blocks on another: results of database and broker work that must not hold a
// mailbox come back as messages; ticks come from goroutines the actors own.
package actors
