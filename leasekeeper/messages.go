package leasekeeper

import "time"

// OwnedAccount is one account a committed cycle confirmed.
type OwnedAccount struct {
	Epoch         int64
	ConfigVersion int64
	// Gate is this account's own gate: confirmed by every cycle that renewed the account,
	// revoked when the account is lost. A new epoch gets a new gate.
	Gate *Gate
}

// Owned tells the Supervisor what this process owns after a successful cycle.
type Owned struct {
	Accounts map[int64]OwnedAccount
	// TrustedUntil is the node's deadline after this cycle.
	TrustedUntil time.Time
}

// StopAccounts asks the Supervisor to stop every AccountActor (each finishes its in-flight
// order). It answers AccountsStopped when all have ended, or at By with those that have
// not. The LeaseKeeper has closed every gate before it asks.
type StopAccounts struct{ By time.Time }

// AccountsStopped answers StopAccounts. Only an account in neither list may be released:
// its actor has ended with nothing in flight.
type AccountsStopped struct {
	// Running are the accounts whose actors had not ended by the deadline: one may still
	// be sending.
	Running []int64
	// HeldBack are the accounts whose actors ended with an order of unknown outcome that
	// may still execute, until when (on the LeaseKeeper's clock).
	HeldBack map[int64]time.Time
}

// StopSome asks the Supervisor to stop the AccountActors of accounts the node hands off
// (each finishes its in-flight order) and to forget them; it answers SomeStopped when all
// have stopped. Only then are their statuses flushed and their leases released.
type StopSome struct{ IDs []int64 }

// SomeStopped answers StopSome. HeldBack are the accounts whose actors ended with an
// order of unknown outcome that may still execute, until when (on the LeaseKeeper's
// clock): those are not released before then.
type SomeStopped struct{ HeldBack map[int64]time.Time }

// Shutdown asks the LeaseKeeper for a clean shutdown: close every gate, stop the accounts,
// flush, then release the leases of the accounts that ended with nothing in flight, all
// before Deadline (zero: DefaultShutdownTimeout from now). It answers
// ShutdownDone.
type Shutdown struct{ Deadline time.Time }

// Halt closes every gate for good and ends the lease cycles, as a crash would (nothing is
// released). A cycle in flight cannot reopen a gate afterwards. It answers Halted.
type Halt struct{}

// Halted answers Halt.
type Halted struct{}

// ShutdownDone answers Shutdown with the number of leases released, or the error.
type ShutdownDone struct {
	Released int64
	Err      error
}

// SetDraining stops (true) or resumes (false) claiming new accounts. Held leases are
// still renewed.
type SetDraining struct{ Draining bool }

// Wake asks for a claim soon (a release notification arrived, or the listener came back
// and may have missed some). Wakes are coalesced: one claim, after a short jitter, answers
// every wake that arrived before it started.
type Wake struct{}

// Trigger is why a cycle ran.
type Trigger int8

// Triggers.
const (
	TriggerInterval Trigger = iota // the periodic cycle (the first one included)
	TriggerWake                    // a release notification
	TriggerLeaseEnd                // the earliest foreign lease of the platform ended
)

func (t Trigger) String() string {
	switch t {
	case TriggerWake:
		return "wake"
	case TriggerLeaseEnd:
		return "lease-end"
	}
	return "interval"
}

// CycleReport describes one finished cycle, for metrics and the console.
type CycleReport struct {
	Trigger  Trigger
	Started  time.Time
	Duration time.Duration
	Err      error
	Owned    int
	Claimed  int
	Renewed  int
	Released int
	Lost     int
	// Share is the node's fair share of its platform in this cycle; LiveNodes the
	// platform's live nodes; HandingOff the accounts it began to hand back.
	Share      int
	LiveNodes  int
	HandingOff int
}

// Flush asks the StatusWriter to write everything it buffered; it answers Flushed. The
// LeaseKeeper sends it after the accounts have stopped and before it releases the leases,
// while the fenced writes can still land.
type Flush struct{}

// Flushed answers Flush.
type Flushed struct{ Err error }
