// Package broker is the seam between the copier engine and trade servers: the Broker and
// Session interfaces, the value types they exchange (accounts, symbols, positions, order
// requests, master feed events) and the classified errors every implementation returns.
//
// It knows nothing of leases or SQL. Implementations live in sub-packages: broker/sim (a
// simulated MetaTrader-like trade server) and broker/bridge (a network protocol whose client
// implements Broker and whose server exposes any Broker).
package broker

import (
	"context"
	"time"

	"github.com/google/uuid"
)

// Side is the direction of a position.
type Side int8

const (
	// Buy is a long position.
	Buy Side = 1
	// Sell is a short position.
	Sell Side = -1
)

// Opposite returns the other side.
func (s Side) Opposite() Side { return -s }

// String returns "buy" or "sell".
func (s Side) String() string {
	switch s {
	case Buy:
		return "buy"
	case Sell:
		return "sell"
	}
	return "invalid"
}

// Valid reports whether s is Buy or Sell.
func (s Side) Valid() bool { return s == Buy || s == Sell }

// AccountMode is how an account aggregates positions of one symbol.
type AccountMode int8

const (
	// Hedging accounts keep every position apart, in both directions (MT4, MT5 hedging).
	Hedging AccountMode = 1
	// Netting accounts hold at most one position per symbol (MT5 netting).
	Netting AccountMode = 2
)

// String returns "hedging" or "netting".
func (m AccountMode) String() string {
	switch m {
	case Hedging:
		return "hedging"
	case Netting:
		return "netting"
	}
	return "invalid"
}

// Credentials identify and authenticate one trading account on one trade server.
// Password is a secret: never log it and do not keep it after Connect returns.
type Credentials struct {
	Login    string
	Server   string
	Password string
	// FIX is the account's FIX 4.4 session settings (broker/fix only; others ignore it).
	FIX FIXSession
}

// FIXSession is an account's FIX session settings; empty fields take their defaults (see
// broker/fix).
type FIXSession struct {
	SenderCompID, SenderSubID string
	TargetCompID, TargetSubID string
	Username                  string // the Logon's user name (tag 553); empty: Login
	Dialect                   string // the venue's FIX dialect (broker/fix/fixwire); empty: the node's
	// Symbols is the account's own symbol list for a dialect without SecurityList (fix44);
	// empty: the node's. broker/fix checks it (fix.CheckSymbols).
	Symbols []FIXSymbol
	// PositionMode is the account's position mode where the dialect cannot ask the venue
	// (fix44): "netting" or "hedging"; empty: the node's. broker/fix refuses hedging with
	// fix44 (fix.ParsePositionMode reads it).
	PositionMode string
}

// IsZero reports whether the account has no FIX session setting at all.
func (f FIXSession) IsZero() bool {
	return f.SenderCompID == "" && f.SenderSubID == "" && f.TargetCompID == "" && f.TargetSubID == "" &&
		f.Username == "" && f.Dialect == "" && len(f.Symbols) == 0 && f.PositionMode == ""
}

// FIXSymbol is one symbol of a configured list (a venue without SecurityList): its spec
// (name, contract size, digits, lot minimum, step and maximum; the rest is unused) and
// what the venue calls it in Symbol (55).
type FIXSymbol struct {
	SymbolSpec
	// ID is the venue's Symbol (55); empty: the name.
	ID string
}

// SymbolEntry is a FIXSymbol as configured lists write it — the list file
// (?symbols=FILE), an account's stored FIX settings, the bridge's wire — flat, under one set
// of JSON names.
type SymbolEntry struct {
	Name         string  `json:"name"`
	ID           string  `json:"id,omitempty"` // the venue's Symbol (55); empty: the name
	ContractSize float64 `json:"contract_size"`
	Digits       int     `json:"digits"`
	MinLot       float64 `json:"min_lot"`
	LotStep      float64 `json:"lot_step"`
	MaxLot       float64 `json:"max_lot"` // 0: no maximum
}

// Symbol is the entry as a FIXSymbol.
func (e SymbolEntry) Symbol() FIXSymbol {
	return FIXSymbol{ID: e.ID, SymbolSpec: SymbolSpec{Name: e.Name, ContractSize: e.ContractSize, Digits: e.Digits,
		MinLot: e.MinLot, LotStep: e.LotStep, MaxLot: e.MaxLot}}
}

// Entry is the symbol as a list entry.
func (s FIXSymbol) Entry() SymbolEntry {
	return SymbolEntry{Name: s.Name, ID: s.ID, ContractSize: s.ContractSize, Digits: s.Digits, MinLot: s.MinLot,
		LotStep: s.LotStep, MaxLot: s.MaxLot}
}

// AccountInfo is an account's state as the trade server reports it.
type AccountInfo struct {
	Login    string
	Currency string
	Balance  float64
	Equity   float64
	Leverage int
	Mode     AccountMode
	// EquityUnknown: the trade server does not say the account's balance and equity (a
	// standard FIX 4.4 venue that refuses CollateralInquiry): Balance, Equity, Currency and
	// Leverage are then not the account's and must not be read as such — never as 0. Sizing
	// that needs them skips the copy (reconcile.SkipEquityUnknown); an equity protection
	// that needs them cannot be evaluated, so the follower opens no new copies.
	EquityUnknown bool
}

// SymbolSpec is a tradable instrument as one server specifies it. Two servers may specify
// "the same" instrument differently (contract size, suffix): sizing must align them.
type SymbolSpec struct {
	Name         string  // as the server names it, suffix included ("EURUSD.m")
	ContractSize float64 // units per 1.0 lot
	MinLot       float64
	MaxLot       float64
	LotStep      float64
	Digits       int     // price digits
	Point        float64 // 10^-Digits
	TradeAllowed bool
	// Bid and Ask are the last quote when the spec was read (0 when unknown); planners use
	// them to bound the price deviation of late copies.
	Bid, Ask float64
}

// Position is an open position (MT5 terms) or open market order (MT4 terms).
type Position struct {
	Ticket    int64
	Symbol    string
	Side      Side
	Volume    float64 // lots
	OpenPrice float64
	SL        float64 // 0 = none
	TP        float64 // 0 = none
	Magic     int64
	Comment   string    // at most MaxCommentLen; the server may overwrite it
	OpenTime  time.Time // server clock
}

// MaxCommentLen is the longest order comment MetaTrader servers keep.
const MaxCommentLen = 31

// OrderType selects a market order or, optionally, a pending order.
type OrderType int8

const (
	// Market executes now at the current price.
	Market OrderType = iota
	// Limit is a pending order at a better price than the current one.
	Limit
	// Stop is a pending order at a worse price than the current one.
	Stop
)

// Order carries what every order request carries: a unique request id, the account's
// fencing token (its lease epoch), the id of the node that sends it, and the instant after
// which it must not execute.
type Order struct {
	RequestID uuid.UUID
	Token     int64  // lease epoch of the sender; a server may reject one lower than it has seen
	Node      string // sender, recorded in the server's order log
	// Deadline is an absolute instant (the sender's lease trust mapped to wall-clock
	// time): a receiver that gets the request after it, by its own clock, refuses it with
	// ErrExpired and never executes it. Zero: no deadline.
	Deadline time.Time
}

// Expired reports whether o's deadline has passed at now.
func (o Order) Expired(now time.Time) bool { return !o.Deadline.IsZero() && now.After(o.Deadline) }

// OpenRequest opens a position.
type OpenRequest struct {
	Order
	Symbol  string
	Side    Side
	Type    OrderType // Market unless the implementation supports pending orders
	Volume  float64
	Price   float64 // pending orders only; 0 for Market
	SL, TP  float64
	Magic   int64
	Comment string
	// WorstPrice bounds a Market order's fill (0: any price): at most this for a buy, at
	// least this for a sell. A trade server that would fill beyond it refuses the order as
	// a requote (CodeRequote, ErrRetryable) and opens nothing: MetaTrader's deviation, a FIX
	// limit order's price. The simulator and the bridge carry it; the FIX client does not
	// (broker/fix/FIX.md).
	WorstPrice float64
}

// CloseRequest closes a position in full (Volume 0) or in part.
type CloseRequest struct {
	Order
	Ticket int64
	Volume float64 // 0 = the whole position
}

// ModifyRequest sets a position's stop-loss and take-profit (0 removes one).
type ModifyRequest struct {
	Order
	Ticket int64
	SL, TP float64
}

// OrderResult is a successful order's outcome.
type OrderResult struct {
	Ticket     int64   // the position the order opened, closed or modified
	Price      float64 // execution price (0 for Modify)
	Volume     float64 // volume executed
	ServerTime time.Time
	// Funds are the account's balance and equity right after the order, where the trade
	// server says them with the result (the simulator and the bridge do; FIX does not).
	Funds Funds
}

// Funds are an account's balance and equity at one moment, as a trade server reports them
// beside an order's result or a feed event. Sizing by balance or equity reads the latest
// the engine has: a close changes the balance at once, and a reading minutes old sizes
// copies on money the account no longer has.
type Funds struct {
	Known   bool // the server said them; when false Balance and Equity are not the account's
	Balance float64
	Equity  float64
}

// EventKind is what happened to a master position.
type EventKind int8

const (
	// Opened: a new position.
	Opened EventKind = iota + 1
	// Modified: SL or TP changed.
	Modified
	// PartiallyClosed: volume reduced; Position holds the remaining volume.
	PartiallyClosed
	// Closed: the position is gone; Position holds its last state.
	Closed
)

// String names the kind.
func (k EventKind) String() string {
	switch k {
	case Opened:
		return "opened"
	case Modified:
		return "modified"
	case PartiallyClosed:
		return "partially_closed"
	case Closed:
		return "closed"
	}
	return "invalid"
}

// Event is one change of a master account's positions. Within one Epoch, Seq increases by
// exactly one per event; Epoch changes whenever the feed restarts. A consumer that sees a
// gap in Seq or an Epoch it does not know has missed events and must reconcile.
type Event struct {
	Login      string
	Epoch      int64
	Seq        int64
	Kind       EventKind
	Position   Position
	ServerTime time.Time
	// Funds are the master account's balance and equity right after the event, where the
	// trade server says them (the simulator and the bridge do).
	Funds Funds
}

// Broker opens trading sessions.
type Broker interface {
	// Connect opens a session for one account. The error is classified (see errors.go).
	Connect(ctx context.Context, creds Credentials) (Session, error)
}

// Session is one connected trading account. Implementations are safe for concurrent use.
type Session interface {
	// Account returns balance, equity, currency, leverage and mode; or, from a trade
	// server that does not say the balance and equity, the login and mode with
	// EquityUnknown set.
	Account(ctx context.Context) (AccountInfo, error)
	// Symbols returns the specs of every symbol the account can see.
	Symbols(ctx context.Context) ([]SymbolSpec, error)
	// Positions returns every open position of the account.
	Positions(ctx context.Context) ([]Position, error)
	// Open sends an order that opens a position.
	Open(ctx context.Context, req OpenRequest) (OrderResult, error)
	// ClosePosition closes a position in full or in part.
	ClosePosition(ctx context.Context, req CloseRequest) (OrderResult, error)
	// Modify changes a position's SL/TP.
	Modify(ctx context.Context, req ModifyRequest) (OrderResult, error)
	// Fence raises the highest fencing token the server has seen for the account to
	// o.Token, changing nothing else: a new owner calls it before it reads positions, so
	// that the old owner's stale orders are refused from then on. A token lower than one
	// seen fails with ErrFenced (when the server enforces tokens); an expired o with
	// ErrExpired. A server that does not check tokens returns nil.
	Fence(ctx context.Context, o Order) error
	// Subscribe streams the account's position events from now on. The channel is closed
	// when ctx ends, the session closes or the connection drops; subscribe again to resume
	// (the new stream may carry a new Epoch).
	Subscribe(ctx context.Context) (<-chan Event, error)
	// Close ends the session and its subscriptions.
	Close() error
}
