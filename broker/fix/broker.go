// Package fix is a broker.Broker over FIX 4.4 TRADE sessions (quickfixgo initiators): one
// session per account, logon with the account's credentials, heartbeats, reconnect with
// backoff and optional TLS. Every broker call maps to FIX messages (FIX.md beside this
// file has the flows, tags and error mapping); the dialect shared with the simulator's FIX
// front is broker/fix/fixwire.
//
// Order ids: the ClOrdID (11) of an order is its broker.Order.RequestID. An order sent
// again with a request id this Broker already sent for the account (a resend after an
// unknown outcome) carries the same ClOrdID and PossResend (97=Y), so the venue reports
// the order's status instead of trading twice.
package fix

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quickfixgo/quickfix"
	"github.com/rs/zerolog"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/broker/fix/fixwire"
)

// Defaults of Config.
const (
	DefaultTargetCompID = "cServer"
	DefaultTargetSubID  = "TRADE"
	DefaultHeartbeat    = 30 * time.Second
	DefaultReplyTimeout = 10 * time.Second
	DefaultLogonTimeout = 10 * time.Second
	DefaultReconnectMin = 100 * time.Millisecond
	DefaultReconnectMax = 10 * time.Second
)

// Config configures a Broker. Addr is required; zero fields get the defaults above.
type Config struct {
	// Addr is the venue's host:port.
	Addr string
	// TLS connects over TLS; TLSServerName and TLSInsecureSkipVerify tune the check of
	// the venue's certificate (system roots).
	TLS                   bool
	TLSServerName         string
	TLSInsecureSkipVerify bool
	// SenderCompID, SenderSubID, TargetCompID and TargetSubID go in every header. An
	// account's server field (Credentials.Server) may name its own (see accountIDs):
	// "SENDER[/SENDERSUB][@TARGET[/TARGETSUB]]"; SenderCompID defaults to the login.
	SenderCompID string
	SenderSubID  string
	TargetCompID string
	TargetSubID  string
	// Heartbeat is HeartBtInt (108), whole seconds.
	Heartbeat time.Duration
	// ReplyTimeout bounds the wait for a reply when the caller's context does not; an
	// order that gets none has an unknown outcome.
	ReplyTimeout time.Duration
	// StatusTimeout: after an order got no reply within ReplyTimeout, the broker asks the
	// venue for the order's status (OrderStatusRequest) and waits this long for it
	// (default ReplyTimeout); a fill or a final reject turns the unknown outcome into a
	// known one. Negative: do not ask.
	StatusTimeout time.Duration
	// SymbolsMaxAge: Symbols serves a list read less than this long ago from memory
	// (default 1 s); concurrent reads share one SecurityListRequest.
	SymbolsMaxAge time.Duration
	// LogonTimeout bounds each connection attempt up to the Logon reply.
	LogonTimeout time.Duration
	// PollPositions > 0 makes Subscribe poll the account's positions at this interval and
	// report the differences, for venues that report only the session's own orders
	// (cTrader, LMAX): a master's trades made in its terminal reach no other session.
	// Zero: a RequestForPositions subscription (the simulator's front reports every change).
	PollPositions time.Duration
	// ReconnectMin and ReconnectMax bound the exponential backoff between attempts.
	ReconnectMin, ReconnectMax time.Duration
	// Token, when set, goes in every Logon as RawData (96) with RawDataLength (95): the
	// venue's shared secret for all accounts of the node, where it requires one (`copierd
	// sim --token`), beside each account's own password. Never logged.
	Token string
	// Log receives session events; the password is never logged.
	Log zerolog.Logger
	// Dialect is the venues' FIX dialect where an account names none (Credentials.FIX.
	// Dialect); default fixwire.DefaultDialect (ctrader). FIX.md has what each uses.
	Dialect fixwire.Dialect
	// Symbols is the venue's symbol list for a dialect without SecurityList (fix44), for
	// the accounts without their own (Credentials.FIX.Symbols, which comes first): one of
	// the two is required there; unused otherwise.
	Symbols []Symbol
	// Book keeps the positions of accounts in a dialect without position ids (fix44),
	// tracked from the broker's own fills; default a MemBook (lost with the process: a
	// node passes the store's).
	Book Book
	// PositionMode is the venue accounts' position mode where the dialect cannot ask
	// (fix44), for the accounts that name none (Credentials.FIX.PositionMode, which comes
	// first); zero is netting. A hedging one is refused with fix44: a close there is an
	// opposite order, which nets.
	PositionMode broker.AccountMode
}

// ParsePositionMode reads a position mode setting: "netting" or "hedging"; "" is zero (the
// node's, or netting).
func ParsePositionMode(s string) (broker.AccountMode, error) {
	switch s {
	case "":
		return 0, nil
	case "netting":
		return broker.Netting, nil
	case "hedging":
		return broker.Hedging, nil
	}
	return 0, fmt.Errorf("position mode %q: want netting or hedging", s)
}

// checkPositionMode refuses a position mode the dialect cannot serve.
func checkPositionMode(d fixwire.Dialect, m broker.AccountMode) error {
	if m == broker.Hedging && !d.Features().PositionIDs {
		return fmt.Errorf("fix: the %s dialect closes a position by an opposite order, which nets: a hedging account cannot be served; use a netting account, or a dialect with position ids (ctrader)", d)
	}
	return nil
}

// Symbol is one configured symbol: its spec (lots, digits, contract size) and the venue's
// Symbol (55) for it (ID; default the name). It is the account's kind too, so the node's
// list and an account's are one type, checked by one CheckSymbols.
type Symbol = broker.FIXSymbol

func (c Config) withDefaults() (Config, error) {
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		return c, fmt.Errorf("fix: venue address %q: %w", c.Addr, err)
	}
	if c.TargetCompID == "" {
		c.TargetCompID = DefaultTargetCompID
	}
	if c.TargetSubID == "" {
		c.TargetSubID = DefaultTargetSubID
	}
	if c.Heartbeat < time.Second {
		c.Heartbeat = DefaultHeartbeat
	}
	if c.ReplyTimeout <= 0 {
		c.ReplyTimeout = DefaultReplyTimeout
	}
	if c.StatusTimeout == 0 {
		c.StatusTimeout = c.ReplyTimeout
	}
	if c.SymbolsMaxAge <= 0 {
		c.SymbolsMaxAge = time.Second
	}
	if c.LogonTimeout <= 0 {
		c.LogonTimeout = DefaultLogonTimeout
	}
	if c.ReconnectMin <= 0 {
		c.ReconnectMin = DefaultReconnectMin
	}
	if c.ReconnectMax < c.ReconnectMin {
		c.ReconnectMax = max(DefaultReconnectMax, c.ReconnectMin)
	}
	if strings.ContainsRune(c.Token, '\x01') {
		return c, errors.New("fix: the venue token contains SOH (0x01), which FIX cannot carry")
	}
	d, err := fixwire.ParseDialect(string(c.Dialect))
	if err != nil {
		return c, fmt.Errorf("fix: %w", err)
	}
	c.Dialect = d.Or(fixwire.DefaultDialect)
	if err := checkPositionMode(c.Dialect, c.PositionMode); err != nil {
		return c, err
	}
	if c.Book == nil {
		c.Book = NewMemBook()
	}
	if err := CheckSymbols(c.Symbols); err != nil {
		return c, err
	}
	return c, nil
}

// Broker connects FIX sessions. It is safe for concurrent use.
type Broker struct {
	cfg    Config
	epochs atomic.Int64
	ids    atomic.Int64

	mu   sync.Mutex
	sent map[string]*sentOrders // by login
	// health is the sessions' logon state, for Connected.
	health health

	// wire, when set (tests, before any Connect), sees every message as it is written.
	wire func(raw string)
	// reported, when set (tests, before any Connect), is called when a venue's own report
	// (a protective order's fill or cancel) has been handled.
	reported func(login, clOrdID string)
}

var _ broker.Broker = (*Broker)(nil)

// New returns a Broker for one venue.
func New(cfg Config) (*Broker, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	b := &Broker{cfg: cfg, sent: map[string]*sentOrders{}}
	// Epochs start at the wall clock so a restarted process does not reuse recent ones.
	b.epochs.Store(time.Now().UnixNano())
	return b, nil
}

// sentLimit is how many ClOrdIDs per account are remembered for PossResend.
const sentLimit = 10000

// sentOrders remembers the orders sent for one account, so a resend is marked as one and
// carries the original message.
type sentOrders struct {
	mu   sync.Mutex
	msgs map[string]*quickfix.Message
	ring []string
	next int
}

func (b *Broker) sentFor(login string) *sentOrders {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.sent[login]
	if s == nil {
		s = &sentOrders{msgs: map[string]*quickfix.Message{}}
		b.sent[login] = s
	}
	return s
}

// lookup returns the message first sent with clOrdID, if any.
func (s *sentOrders) lookup(clOrdID string) *quickfix.Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.msgs[clOrdID]
}

// remember records a sent order message.
func (s *sentOrders) remember(clOrdID string, m *quickfix.Message) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.msgs[clOrdID]; ok {
		return
	}
	if len(s.ring) < sentLimit {
		s.ring = append(s.ring, clOrdID)
	} else {
		delete(s.msgs, s.ring[s.next])
		s.ring[s.next] = clOrdID
		s.next = (s.next + 1) % sentLimit
	}
	s.msgs[clOrdID] = m
}

// Connect implements broker.Broker: it logs on and returns once the venue accepted the
// logon. A refused logon is ErrPermanent / CodeAuthFailed with the venue's reason; a
// venue that cannot be reached is ErrDisconnected.
func (b *Broker) Connect(ctx context.Context, creds broker.Credentials) (broker.Session, error) {
	if err := ctx.Err(); err != nil {
		return nil, notSent("connect", err)
	}
	if creds.Login == "" {
		return nil, broker.NewError(broker.ErrPermanent, broker.CodeAuthFailed, "fix: no login")
	}
	s, err := newSession(b, creds)
	if err != nil {
		return nil, err
	}
	first := make(chan error, 1)
	go s.run(first)
	select {
	case err := <-first:
		if err != nil {
			_ = s.Close()
			return nil, err
		}
		return s, nil
	case <-ctx.Done():
		_ = s.Close()
		return nil, notSent("connect", ctx.Err())
	}
}

// notSent is the error of a request that never left: safe to resend.
func notSent(what string, cause error) error {
	return fmt.Errorf("%w: %w", broker.NewError(broker.ErrDisconnected, broker.CodeNoConnection, "fix: %s not sent", what), cause)
}

// errClosed is returned by calls on a closed session.
func errClosed() error {
	return broker.NewError(broker.ErrDisconnected, broker.CodeNoConnection, "fix: session closed")
}

var errDown = errors.New("fix session down")

func (b *Broker) nextID(prefix string) string {
	return prefix + strconv.FormatInt(b.ids.Add(1), 36)
}
