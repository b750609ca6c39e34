package follower

import (
	"fmt"
	"time"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/reconcile"
	"github.com/snapcopier/copier/reconcile/protect"
)

// Ready is what the Core asks for after an input. Its slices belong to the Core and are
// valid until the next input.
type Ready struct {
	// Synchronous, at most one of the three: do it now and step its outcome before any
	// other input.
	Send          *Order // send this order (gate checked before every attempt) → OrderDone
	RaiseToken    bool   // make the session carry this epoch's token (Session.Fence) → TokenDone
	ReadPositions bool   // read the follower's positions (netting) → PositionsRead

	// Load asks for the configuration (and a session when Connect) → Loaded or LoadFailed.
	Load *LoadAsk
	// RetryLoadIn > 0: step RetryLoad after this long (a load failed).
	RetryLoadIn time.Duration
	// ResendIn > 0: the order in flight was refused for now (FailRetryable); step
	// ResendDue after this long. Its run waits meanwhile; other inputs may be stepped.
	ResendIn time.Duration
	// Reconcile asks the Reconciler to fetch and plan → Reconciled.
	Reconcile *Ask
	// WantRepair: the periodic repair is due. Ask the Reconciler for a turn and step
	// RepairTurn when it grants one: the account does not wait in the Reconciler's queue
	// (where every event would wait behind it) but is called when there is room.
	WantRepair bool
	// Expedite: the reconcile in flight was asked as a background repair (periodic), and
	// now something waits for it (a master event to copy): if the Reconciler has not
	// started it yet, it should start it ahead of the other background repairs.
	Expedite bool
	// Prioritize: a stop-out started or ended while the reconcile in flight was asked
	// for; its plan will be discarded and a protection reconcile (Cause CauseProtection)
	// follows it. If the Reconciler has not started it yet, it should start it ahead of
	// every other reconcile, so the stop-out's closes do not wait in its queue.
	Prioritize bool
	// FlushEvents: events were held back (EventBehind); step FlushEvents after the events
	// now waiting in the mailbox (send it to yourself: it queues behind them).
	FlushEvents bool
	// Repair: step RepairDue after RepairIn (0: as soon as this message is done).
	Repair   bool
	RepairIn time.Duration
	// Masters, when MastersChanged, is the set of masters whose feeds to follow.
	Masters        []int64
	MastersChanged bool
	// Fence: the trade server has seen a newer token; another node owns the account. Close
	// the gate until the account is claimed with a new epoch.
	Fence bool
	// WatchEquity: the follower has stop-out limits; keep its equity read (EquityRead).
	WatchEquity bool

	Tickets    []TicketChange    // ticket-map rows to write, in order
	Protection []ProtectionState // protection states to write through the fence
	Journal    []Journal         // orders sent, dropped or refused, and stop-outs
	Notes      []Note            // what happened, for logs, metrics and observers

	StatusChanged bool // Status() changed
	WriteStatus   bool // queue the status row and the positions snapshot
}

// LoadAsk says what to load.
type LoadAsk struct {
	Tickets bool // read the stored ticket map too (the first load only)
	Connect bool // open the follower's session
}

// Ask is a reconcile to run: fetch the follower and Masters, and plan every link.
type Ask struct {
	Cause   Cause
	Masters []int64
	Links   []AskLink
}

// AskLink is one link to plan, with its ticket map.
type AskLink struct {
	MasterID  int64
	Link      reconcile.Link
	TicketMap []reconcile.TicketMapEntry
	// MasterClock is the master server's clock offset as its feed showed it
	// (reconcile.Input.MasterClock): the reconcile's plan dates the master's positions by it.
	MasterClock time.Duration
}

// Order is one action to send for a link. Origin is the master event it copies (nil on
// a reconcile's plan).
type Order struct {
	Link    int64
	Action  reconcile.Action
	Origin  *Origin
	Attempt int // 1, and more for a resend (Ready.ResendIn)
}

// TicketChange is one ticket-map row: tracked, or closed at ClosedAt when that is set.
type TicketChange struct {
	Entry    reconcile.TicketMapEntry
	ClosedAt time.Time
}

// ProtectionState is the state of one stop-out scope (0: the follower's own limits; any
// other: the link of that id) to write, based on operator-reset generation ResetGen.
type ProtectionState struct {
	Scope    int64
	State    []byte // JSON of protect.State
	ResetGen int64
}

// Journal is one entry of the account's copy journal.
type Journal struct {
	Time time.Time
	// Order is the order sent, dropped or refused, kept as its summary and described only
	// when the journal is read (Action); zero for a stop-out.
	Order reconcile.Summary
	// StopOut describes a stop-out's entry.
	StopOut string
	// Skip is why a master position was not copied (Result "skipped"): SkipDetail says
	// more. Zero for an order or a stop-out.
	Skip         reconcile.SkipReason
	SkipDetail   string
	MasterTicket int64
	Ticket       int64
	Result       string // "ok", an error class, "dropped", "stop_out" or "skipped"
	Latency      time.Duration
	Link         int64 // the link the order served (0: none, such as a stop-out)
	// Quality is the latency split and slippage of an order copied on the event path
	// (HasQuality); a reconcile's orders have none.
	Quality    Quality
	HasQuality bool
}

// Action describes the entry: its order, the stop-out, or why a position was not copied.
func (j *Journal) Action() string {
	if j.StopOut != "" {
		return j.StopOut
	}
	if j.Skip != 0 {
		return fmt.Sprintf("not copied (%s): %s", j.Skip, j.SkipDetail)
	}
	return j.Order.String()
}

// NoteKind names something that happened, for logs, metrics and observers.
type NoteKind uint8

// Note kinds.
const (
	NoteLoaded           NoteKind = iota + 1 // Version, Links
	NoteLoadFailed                           // Err
	NoteBadConfig                            // Err: a link or the protections cannot be used
	NoteFeedAttached                         // Master, Restarted
	NoteReconcileStarted                     // Cause
	NoteReconcileDone                        // Cause, Err, Idle
	NoteReconcileFailed                      // Err
	NoteOrderFailed                          // Err, Failure, Action: an order did not execute
	NoteOrderRetry                           // Err, Failure, Action: refused for now; resent after Ready.ResendIn
	NoteDropped                              // Action: not sent, the lease is not confirmed
	NoteTokenFailed                          // Err, Failure: the token could not be raised
	NoteStopOut                              // Link (scope), Stop
	NoteEquityFailed                         // Err: the equity could not be read
	NoteSkipped                              // Link, Skip: a master position is not copied (once per position and reason)
)

var noteNames = [...]string{"", "loaded", "load-failed", "bad-config", "feed-attached", "reconcile-started", "reconcile-done",
	"reconcile-failed", "order-failed", "order-retry", "dropped", "token-failed", "stop-out", "equity-failed", "skipped"}

// String names the kind.
func (k NoteKind) String() string {
	if int(k) < len(noteNames) {
		return noteNames[k]
	}
	return "unknown"
}

// Note is one thing that happened.
type Note struct {
	Kind      NoteKind
	Cause     Cause
	Err       error
	Failure   Failure // what Err means, for orders and the token
	Action    *reconcile.Action
	Master    int64
	Link      int64
	Version   int64
	Links     int
	Restarted bool
	Idle      bool
	Stop      *protect.StopOut
	Skip      *reconcile.Skip
}

// Phase is where the account is in its life.
type Phase int8

// Phases.
const (
	PhaseStarting    Phase = iota + 1 // loading configuration, connecting
	PhaseReconciling                  // fetching and planning
	PhaseCopying                      // in step with its masters
	PhaseDirty                        // work was dropped or an outcome is unknown; a reconcile is due
	PhaseFailed                       // crashed or cannot connect; retried with backoff
)

// String names the phase (it is also the status written to trading_accounts.status).
func (p Phase) String() string {
	switch p {
	case PhaseStarting:
		return "starting"
	case PhaseReconciling:
		return "reconciling"
	case PhaseCopying:
		return "copying"
	case PhaseDirty:
		return "dirty"
	case PhaseFailed:
		return "failed"
	}
	return "unknown"
}

// Status is the account as the Core sees it.
type Status struct {
	Phase     Phase
	LastError string
	Balance   float64
	Equity    float64
	// EquityUnknown: the trade server does not say the balance and equity
	// (broker.AccountInfo.EquityUnknown); Balance and Equity are then 0 and not the account's.
	EquityUnknown bool
	Positions     int
	LastCopy      time.Time
	LastLag       time.Duration // master event (server time) to follower order (server time)
	Reconciles    int
	Dropped       int
	// StopOut is the stop-out in force, or the equity protection that cannot be evaluated
	// (equity unknown: no new copies); "" while copying.
	StopOut string
}

// Inputs.

// Config is a follower's configuration as loaded.
type Config struct {
	Version   int64
	CloseOnly protect.CloseOnly // the follower's own close-only mode
	Links     []LinkConfig
}

// LinkConfig is one enabled link. MasterEnabled is false when its master is switched off:
// its copies then stay as they are.
type LinkConfig struct {
	ID, MasterID  int64
	Magic         int64
	Settings      []byte // JSON, reconcile.Settings
	MasterEnabled bool
}

// Protection is the follower's own limits (JSON of protect.Limits, nil when none) and the
// stored state of every scope.
type Protection struct {
	Limits []byte
	States map[int64]ProtectionState
}

// Loaded is a successful load.
type Loaded struct {
	Config     Config
	Protection Protection
	// Tickets is the stored ticket map, when WithTickets (LoadAsk.Tickets).
	Tickets     []reconcile.TicketMapEntry
	WithTickets bool
}

// Reconciled is the Reconciler's answer: what it fetched and a plan per link id.
type Reconciled struct {
	Follower reconcile.AccountState
	Masters  map[int64]reconcile.AccountState
	Plans    map[int64]reconcile.Result
	Err      error
}

// OrderOutcome is what became of one attempt of a Ready.Send.
type OrderOutcome struct {
	Result broker.OrderResult
	Err    error
	// Dropped: not sent, the lease gate was closed (or the node halted).
	Dropped bool
	SentAt  time.Time // when the attempt was sent
}
