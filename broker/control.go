package broker

import (
	"context"
	"time"

	"github.com/google/uuid"
)

// Controller is what a simulated or test trade server offers beyond trading sessions:
// provisioning accounts, driving master accounts, reading any account's positions and the
// server's order log, and injecting faults. broker/sim implements it in-process and
// broker/bridge carries it over the network, so tests, the demo and the stress tool drive
// one simulator from many processes.
type Controller interface {
	// Provision creates an account (or updates its balance and mode when it exists).
	Provision(ctx context.Context, spec AccountSpec) error
	// MasterOpen opens a position on an account as its owner would (not via a session).
	MasterOpen(ctx context.Context, login string, req MasterOpenRequest) (Position, error)
	// MasterModify changes a position's SL/TP.
	MasterModify(ctx context.Context, login string, ticket int64, sl, tp float64) (Position, error)
	// MasterClose closes volume lots of a position (0 = all).
	MasterClose(ctx context.Context, login string, ticket int64, volume float64) error
	// AccountPositions reads any account's open positions.
	AccountPositions(ctx context.Context, login string) ([]Position, error)
	// OrderLog returns the order log entries with Seq > afterSeq, at most limit of them
	// (limit <= 0 means all).
	OrderLog(ctx context.Context, afterSeq int64, limit int) ([]OrderLogEntry, error)
	// SetFaults sets the fault profile for one account, or the global one when login is "".
	SetFaults(ctx context.Context, login string, f Faults) error
	// SetOptions changes server-wide options (token enforcement, de-duplication).
	SetOptions(ctx context.Context, o ServerOptions) error
}

// AccountSpec describes an account to provision.
type AccountSpec struct {
	Login    string
	Password string // empty: any password is accepted
	Currency string
	Balance  float64
	Leverage int
	Mode     AccountMode
	// SymbolSuffix is appended to every symbol this account sees ("" or ".m", ".pro").
	SymbolSuffix string
}

// MasterOpenRequest is a trade a test or the stress tool makes on a master account.
type MasterOpenRequest struct {
	Symbol  string
	Side    Side
	Volume  float64
	SL, TP  float64
	Magic   int64
	Comment string
}

// OrderOp is the operation of an order log entry.
type OrderOp int8

const (
	// OpOpen opens a position.
	OpOpen OrderOp = iota + 1
	// OpClose closes (part of) a position.
	OpClose
	// OpModify changes SL/TP.
	OpModify
)

// String names the operation.
func (o OrderOp) String() string {
	switch o {
	case OpOpen:
		return "open"
	case OpClose:
		return "close"
	case OpModify:
		return "modify"
	}
	return "invalid"
}

// OrderLogEntry is one order request the server received, stamped by the server's clock.
// Master trades made through the Controller are logged too, with Node "" and Master true.
type OrderLogEntry struct {
	Seq        int64 // 1, 2, 3 ... in arrival order
	ServerTime time.Time
	Login      string
	RequestID  uuid.UUID
	Token      int64
	Node       string
	Deadline   time.Time // the request's deadline (zero: none)
	Op         OrderOp
	Symbol     string
	Side       Side
	Volume     float64
	Ticket     int64 // position opened/closed/modified; 0 when rejected before one existed
	Magic      int64
	Comment    string
	Executed   bool   // the order changed the account
	Duplicate  bool   // de-duplicated: a request id seen before, answered with its first result
	Result     Code   // 0 when executed
	Error      string // empty when executed
	Master     bool
}

// Faults is a fault profile. Rates are probabilities in [0, 1] per request (per event for
// DropEventRate); a seeded random source decides, so a run is repeatable.
type Faults struct {
	Latency        time.Duration // added to every request
	RequoteRate    float64       // order rejected with a requote (retryable)
	TimeoutRate    float64       // order times out with unknown outcome (executed or not, 50/50)
	DisconnectRate float64       // per request: the session drops; feeds restart with a new epoch
	DropEventRate  float64       // a feed event is not delivered (the next one shows a gap)
}

// ServerOptions are server-wide switches.
type ServerOptions struct {
	// EnforceTokens rejects an order whose token is lower than the highest seen for the
	// account (what a broker that checked fencing tokens would do).
	EnforceTokens bool
	// DedupRequests answers a request id seen before with its first result instead of
	// executing it again.
	DedupRequests bool
}
