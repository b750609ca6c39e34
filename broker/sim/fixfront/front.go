// Package fixfront serves a trade server (normally the simulator, broker/sim) as a FIX 4.4
// acceptor with the semantics of a cTrader-style venue: logon with user name (553) and
// password (554), sequence numbers reset on every logon, numeric symbol ids from
// SecurityListRequest, hedged positions closed by position id (PosMaintRptID, 721),
// ClOrdID duplicates refused unless PossResend (97), the server's faults shown as a venue
// shows them, and the fence carried in custom tags: an order that arrives after its
// deadline (9003) is refused, its lease-epoch token (9001) goes on to the server. Options.
// Strict makes it a venue that knows only standard FIX 4.4 instead. It is `copierd sim
// --fix` and the counterparty of broker/fix's tests. The dialect is broker/fix/fixwire.
//
// Nobody who reaches the port can take it down or buy its memory: connections are bounded
// in all and per source (Options.MaxConns, MaxConnsPerSource), a connection must deliver
// its Logon within Options.LogonTimeout, one message is at most Options.MaxMessageSize,
// and the accept loop backs off on errors (out of descriptors) instead of stopping (the
// patched acceptor, third_party/quickfix/PATCHES.md; Health reports it for readiness).
// A Logon is refused, with a Logout naming the reason, without the front's token
// (Options.Token) in RawData (96) or with another, for a bad CheckSum, a user name or
// password that is too long (64 / 256 bytes), not UTF-8 or holds a control character, and
// for a password other than that of the login's first accepted logon (the simulator's
// auto-provisioned accounts accept any password; the front remembers a hash of the first
// and holds every later logon to it). Refusals are logged at most once a second, with the
// count of those not logged; Logons keeps the most recent 1,024.
package fixfront

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quickfixgo/quickfix"
	"github.com/quickfixgo/quickfix/config"
	"github.com/rs/zerolog"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/broker/fix/fixwire"
	"github.com/snapcopier/copier/internal/ratelog"
)

// DefaultCompID is the front's SenderCompID, cTrader's.
const DefaultCompID = "cServer"

// Options configure a Front.
type Options struct {
	// CompID is the front's SenderCompID; logons must name it as TargetCompID.
	CompID string
	// TLS, when set, makes the front accept FIX over TLS only.
	TLS *tls.Config
	// Log receives the front's events (bad logons, rejected input); default: discarded.
	Log zerolog.Logger
	// OnOrder, when set, is called as an order message arrives (before it is processed).
	// Tests use it to act while an order is in flight.
	OnOrder func(login, clOrdID string)
	// Now is the front's clock for an order's deadline (9003); default time.Now.
	Now func() time.Time
	// Token, when set, is the shared secret every Logon must carry in RawData (96), with
	// RawDataLength (95): the FIX side of `copierd sim --token`, which the bridge's clients
	// present in their handshake. A Logon without it or with another is refused before its
	// password is checked. Compared in constant time; never logged. Empty: no token.
	Token string
	// Strict makes the front a venue that knows only standard FIX 4.4 (`copierd sim
	// --fix-dialect fix44`): every application message is validated against the stock
	// FIX 4.4 dictionary, a tag it does not define for the message type (our custom tags
	// included) is refused with a session Reject (3); SecurityListRequest,
	// RequestForPositions and CollateralInquiry are refused as unsupported
	// (BusinessMessageReject, 380=3); fills carry no position id (721) and rejects no
	// custom tags. Resting Stop (40=3) and Limit (40=2) orders protecting the account's
	// net position are accepted, replaced (G) and cancelled (F) as its SL and TP
	// (resting.go).
	Strict bool
	// StandardCollateral makes a strict front answer CollateralInquiry instead of refusing
	// it, with a standard CollateralReport only (CollRptID, CollInquiryID, CollStatus,
	// Account, Currency, TotalNetValue as the equity): no balance, leverage or position
	// mode, which standard FIX 4.4 has no fields for. A venue that says the equity.
	StandardCollateral bool

	// Bounds on what clients may hold (0: the default). The demo and the FIX benchmarks
	// log 1,000 sessions on from one host, hence the generous per-source default.
	MaxConns          int           // connections at once (default 4,096)
	MaxConnsPerSource int           // connections at once from one address or IPv6 /64 (default 2,048)
	LogonTimeout      time.Duration // until a connection's Logon has arrived (default 5 s)
	MaxMessageSize    int           // bytes in one incoming message (default 64 KiB)
}

// Defaults of the Options bounds.
const (
	DefaultMaxConns          = 4096
	DefaultMaxConnsPerSource = 2048
	DefaultLogonTimeout      = 5 * time.Second
	DefaultMaxMessageSize    = 64 << 10 // clients send orders and requests, never lists
)

// withDefaults fills in the zero bounds and refuses negative ones.
func (o Options) withDefaults() (Options, error) {
	if o.CompID == "" {
		o.CompID = DefaultCompID
	}
	if o.MaxConns < 0 || o.MaxConnsPerSource < 0 || o.LogonTimeout < 0 || o.MaxMessageSize < 0 {
		return o, errors.New("fixfront: MaxConns, MaxConnsPerSource, LogonTimeout and MaxMessageSize must not be negative")
	}
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&o.MaxConns, DefaultMaxConns)
	def(&o.MaxConnsPerSource, DefaultMaxConnsPerSource)
	def(&o.MaxMessageSize, DefaultMaxMessageSize)
	if o.LogonTimeout == 0 {
		o.LogonTimeout = DefaultLogonTimeout
	}
	return o, nil
}

// optionsReader is what a backing server may offer beyond broker.Controller: its current
// server options, so a resend reaches a de-duplicating server instead of the front's
// memory (broker/sim implements it).
type optionsReader interface {
	Options() broker.ServerOptions
}

// Front is a running FIX acceptor in front of one trade server.
type Front struct {
	b    broker.Broker
	ctl  broker.Controller
	opts Options
	log  zerolog.Logger
	acc  *quickfix.Acceptor
	addr string

	// admit lets one new connection at a time from validation to session creation:
	// quickfixgo v0.9.7 counts dynamic qualifiers between the two without a lock.
	admit    chan struct{}
	admitMu  sync.Mutex
	admitGen int64
	admitted bool // the admission is held

	mu       sync.Mutex
	conns    map[string]net.Conn // by remote address, to drop a session
	sessions map[quickfix.SessionID]*fsession
	accounts map[string]*accountMemo
	resting  map[string]*restingBook // strict mode: resting stop and limit orders, by login
	logons   []LogonRecord           // the most recent maxLogonRecords

	passwords passwords       // per login, of its first accepted logon
	refusals  ratelog.Limiter // refused logons are logged at most once a second

	ids    atomic.Int64
	closed atomic.Bool
}

// LogonRecord is one accepted logon, as the front saw it.
type LogonRecord struct {
	Login      string
	MsgSeqNum  int  // of the Logon message
	ResetSeqNo bool // ResetSeqNumFlag (141) was set
	// The Logon's header ids as the initiator sent them: SenderCompID (49), SenderSubID
	// (50), TargetCompID (56), TargetSubID (57).
	SenderCompID, SenderSubID, TargetCompID, TargetSubID string
}

// Start listens on addr ("127.0.0.1:0" picks a free port) and serves b and ctl.
func Start(addr string, b broker.Broker, ctl broker.Controller, opts Options) (*Front, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	host, port, err := freeAddr(addr)
	if err != nil {
		return nil, err
	}
	f := &Front{b: b, ctl: ctl, opts: opts, log: opts.Log, sessions: map[quickfix.SessionID]*fsession{}, conns: map[string]net.Conn{}, admit: make(chan struct{}, 1), accounts: map[string]*accountMemo{}}
	f.addr = net.JoinHostPort(host, strconv.Itoa(port))

	settings := quickfix.NewSettings()
	g := settings.GlobalSettings()
	g.Set(config.SocketAcceptHost, host)
	g.Set(config.SocketAcceptPort, strconv.Itoa(port))
	g.Set(config.ResetOnLogon, "Y")
	g.Set(config.ResetOnLogout, "Y")
	g.Set(config.ResetOnDisconnect, "Y")
	g.Set(config.DynamicSessions, "Y")
	g.Set(config.DynamicQualifier, "Y")
	g.Set(config.PersistMessages, "N") // sequence numbers reset on logon: nothing is resent
	g.Set(config.HeartBtInt, "30")
	// Bounds of the patched acceptor (third_party/quickfix/PATCHES.md).
	g.Set(config.MaxConnections, strconv.Itoa(opts.MaxConns))
	g.Set(config.MaxConnectionsPerHost, strconv.Itoa(opts.MaxConnsPerSource))
	g.Set(config.FirstMessageTimeout, opts.LogonTimeout.String())
	g.Set(config.MaxMessageSize, strconv.Itoa(opts.MaxMessageSize))
	acc, err := quickfix.NewAcceptor(f, quickfix.NewMemoryStoreFactory(), settings, quickfix.NewNullLogFactory())
	if err != nil {
		return nil, fmt.Errorf("fixfront: %w", err)
	}
	// The acceptor opens its listener only for configured sessions: a template session,
	// added after the acceptor was made so it never runs (a running static session races
	// with Stop in quickfixgo v0.9.7), gives it the port; every real session is dynamic.
	tmpl := quickfix.NewSessionSettings()
	tmpl.Set(config.BeginString, fixwire.BeginString)
	tmpl.Set(config.SenderCompID, opts.CompID)
	tmpl.Set(config.TargetCompID, "__template__")
	if _, err := settings.AddSession(tmpl); err != nil {
		return nil, err
	}
	if opts.TLS != nil {
		acc.SetTLSConfig(opts.TLS)
	}
	acc.SetConnectionValidator(connTracker{f})
	if err := acc.Start(); err != nil {
		return nil, fmt.Errorf("fixfront: listen %s: %w", f.addr, err)
	}
	f.acc = acc
	return f, nil
}

// freeAddr resolves addr; port 0 is replaced by a free port (the acceptor opens its own
// listener and does not report the port it got).
func freeAddr(addr string) (string, int, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("fixfront: address %q: %w", addr, err)
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("fixfront: address %q: bad port", addr)
	}
	if port == 0 {
		l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
		if err != nil {
			return "", 0, fmt.Errorf("fixfront: %w", err)
		}
		port = l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
	}
	return host, port, nil
}

// Addr is the address the front listens on.
func (f *Front) Addr() string { return f.addr }

// Close logs every session out, closes their server sessions and stops listening.
func (f *Front) Close() error {
	if f.closed.Swap(true) {
		return nil
	}
	f.acc.Stop()
	f.mu.Lock()
	ss := f.sessions
	f.sessions = map[quickfix.SessionID]*fsession{}
	f.mu.Unlock()
	for _, s := range ss {
		s.shutdown()
	}
	return nil
}

// Health returns why the front does not accept connections (closed, or its listener
// failing, e.g. out of file descriptors), or nil: for readiness probes.
func (f *Front) Health() error {
	if f.closed.Load() {
		return errors.New("fixfront: closed")
	}
	if err := f.acc.AcceptErr(); err != nil {
		return fmt.Errorf("fixfront: accept on %s: %w", f.addr, err)
	}
	return nil
}

// Logons returns the accepted logons so far (the most recent 1,024), oldest first.
func (f *Front) Logons() []LogonRecord {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]LogonRecord(nil), f.logons...)
}

// Drop cuts the connection of every FIX session of login, without a reply to what is in
// flight: a venue that lost its connection. It returns how many were cut.
func (f *Front) Drop(login string) int {
	n := 0
	for _, s := range f.sessionsOf(login) {
		if c := f.conn(s.id, false); c != nil {
			n++
			_ = c.Close()
		}
	}
	return n
}

// connTracker remembers every connection that reached logon, by remote address.
type connTracker struct{ f *Front }

// Validate implements quickfix.ConnectionValidator; it accepts every connection (the
// logon is checked in FromAdmin).
func (t connTracker) Validate(c net.Conn, _ quickfix.SessionID) error {
	t.f.acquireAdmission()
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	t.f.conns[c.RemoteAddr().String()] = c
	return nil
}

// admissionHold bounds how long a connection that never becomes a session (quickfixgo
// failed to create it) holds the admission.
const admissionHold = 2 * time.Second

// acquireAdmission waits for the admission; OnCreate (or admissionHold) releases it.
func (f *Front) acquireAdmission() {
	f.admit <- struct{}{}
	f.admitMu.Lock()
	f.admitGen++
	f.admitted = true
	gen := f.admitGen
	f.admitMu.Unlock()
	time.AfterFunc(admissionHold, func() { f.releaseAdmission(gen) })
}

// releaseAdmission releases the admission taken as generation gen (once); gen 0
// releases whichever is held.
func (f *Front) releaseAdmission(gen int64) {
	f.admitMu.Lock()
	defer f.admitMu.Unlock()
	if f.admitted && (gen == 0 || f.admitGen == gen) {
		f.admitted = false
		<-f.admit
	}
}

// conn returns (and, with forget, forgets) the connection of a session.
func (f *Front) conn(id quickfix.SessionID, forget bool) net.Conn {
	addr, ok := f.acc.RemoteAddr(id)
	if !ok {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.conns[addr.String()]
	if forget {
		delete(f.conns, addr.String())
	}
	return c
}

func (f *Front) sessionsOf(login string) []*fsession {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*fsession
	for _, s := range f.sessions {
		if s.login == login {
			out = append(out, s)
		}
	}
	return out
}

func (f *Front) session(id quickfix.SessionID) *fsession {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sessions[id]
}

// memo returns the ClOrdID memory of an account.
func (f *Front) memo(login string) *accountMemo {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := f.accounts[login]
	if m == nil {
		m = &accountMemo{orders: map[string]*orderEntry{}}
		f.accounts[login] = m
	}
	return m
}

// nextID returns a fresh id for reports.
func (f *Front) nextID(prefix string) string {
	return prefix + strconv.FormatInt(f.ids.Add(1), 10)
}

// dedups reports whether the backing server de-duplicates request ids itself.
func (f *Front) dedups() bool {
	if o, ok := f.ctl.(optionsReader); ok {
		return o.Options().DedupRequests
	}
	return false
}

// OnCreate implements quickfix.Application: a dynamic session exists, the next
// connection may be admitted.
func (f *Front) OnCreate(quickfix.SessionID) { f.releaseAdmission(0) }

// OnLogon implements quickfix.Application.
func (f *Front) OnLogon(quickfix.SessionID) {}

// OnLogout implements quickfix.Application: the server session and its feeds end.
func (f *Front) OnLogout(id quickfix.SessionID) {
	f.conn(id, true)
	f.mu.Lock()
	s := f.sessions[id]
	delete(f.sessions, id)
	f.mu.Unlock()
	if s != nil {
		s.shutdown()
	}
}

// ToAdmin implements quickfix.Application.
func (f *Front) ToAdmin(*quickfix.Message, quickfix.SessionID) {}

// ToApp implements quickfix.Application.
func (f *Front) ToApp(*quickfix.Message, quickfix.SessionID) error { return nil }

// FromAdmin implements quickfix.Application: a Logon is checked here (version, comp id,
// credentials) and opens the account's server session.
func (f *Front) FromAdmin(msg *quickfix.Message, id quickfix.SessionID) quickfix.MessageRejectError {
	if !msg.IsMsgTypeOf(fixwire.MsgLogon) {
		return nil
	}
	rej := f.logon(msg, id)
	if rej != nil {
		f.conn(id, true)
	}
	return rej
}

// logon checks a Logon and opens the account's server session.
func (f *Front) logon(msg *quickfix.Message, id quickfix.SessionID) quickfix.MessageRejectError {
	user, _ := msg.Body.GetString(fixwire.TagUsername)
	pass, _ := msg.Body.GetString(fixwire.TagPassword)
	if reason := f.checkLogon(msg, id, user, pass); reason != "" {
		f.refused(user, reason)
		return quickfix.RejectLogon{Text: reason}
	}
	sess, err := f.b.Connect(context.Background(), broker.Credentials{Login: user, Password: pass, Server: f.opts.CompID})
	if err != nil {
		f.refused(user, "logon refused: "+err.Error())
		return quickfix.RejectLogon{Text: "logon refused: " + err.Error()}
	}
	f.passwords.remember(user, pass)
	seq, _ := msg.Header.GetInt(quickfix.Tag(34))
	reset, _ := msg.Body.GetBool(quickfix.Tag(141))
	rec := LogonRecord{Login: user, MsgSeqNum: seq, ResetSeqNo: reset}
	rec.SenderCompID, _ = msg.Header.GetString(quickfix.Tag(49))
	rec.SenderSubID, _ = msg.Header.GetString(quickfix.Tag(50))
	rec.TargetCompID, _ = msg.Header.GetString(quickfix.Tag(56))
	rec.TargetSubID, _ = msg.Header.GetString(quickfix.Tag(57))
	s := &fsession{f: f, id: id, login: user, sess: sess, feeds: map[string]context.CancelFunc{}}
	f.mu.Lock()
	old := f.sessions[id]
	f.sessions[id] = s
	if len(f.logons) == maxLogonRecords {
		f.logons = append(f.logons[:0], f.logons[1:]...)
	}
	f.logons = append(f.logons, rec)
	f.mu.Unlock()
	if old != nil {
		old.shutdown()
	}
	if f.opts.Strict {
		b := f.restingOf(user)
		b.mu.Lock()
		has := len(b.orders) > 0
		b.mu.Unlock()
		if has {
			go s.watchResting() // the account's resting orders are watched by its session
		}
	}
	return nil
}

// checkLogon returns why a Logon is refused before the server sees it, or "".
func (f *Front) checkLogon(msg *quickfix.Message, id quickfix.SessionID, user, pass string) string {
	switch {
	case id.BeginString != fixwire.BeginString:
		return "only " + fixwire.BeginString + " is supported"
	case id.SenderCompID != f.opts.CompID:
		return "unknown TargetCompID " + id.SenderCompID + ", want " + f.opts.CompID
	case f.closed.Load():
		return "server shutting down"
	}
	if err := checkSum(msg.Bytes()); err != nil {
		return err.Error()
	}
	if err := checkCredentials(user, pass); err != nil {
		return err.Error()
	}
	if err := checkToken(f.opts.Token, msg); err != nil {
		return err.Error()
	}
	if !f.passwords.check(user, pass) {
		return "logon refused: invalid login or password"
	}
	return ""
}

// refused logs a refused logon, at most one line a second (with the count held back).
func (f *Front) refused(user, reason string) {
	ok, held := f.refusals.Allow(time.Now())
	if !ok {
		return
	}
	if len(user) > maxLoginLen { // a refused name may be huge
		user = user[:maxLoginLen] + "…"
	}
	f.log.Warn().Str("login", user).Str("reason", reason).Int("refusals_not_logged", held).Msg("fix logon refused")
}

// FromApp implements quickfix.Application. Every request runs on its own goroutine so a
// slow order does not hold the session (heartbeats, other orders, feeds).
func (f *Front) FromApp(msg *quickfix.Message, id quickfix.SessionID) quickfix.MessageRejectError {
	s := f.session(id)
	if s == nil {
		return quickfix.NewBusinessMessageRejectError("not logged on", 0, nil)
	}
	mt, err := msg.MsgType()
	if err != nil {
		return err
	}
	if f.opts.Strict {
		if rej := fixwire.ValidateStock(msg); rej != nil {
			f.log.Warn().Str("login", s.login).Str("msg_type", mt).Err(rej).Msg("fix: message refused by the stock FIX 4.4 dictionary")
			return rej
		}
		switch mt {
		case fixwire.MsgSecurityListRequest, fixwire.MsgRequestForPositions:
			return quickfix.UnsupportedMessageType()
		case fixwire.MsgCollateralInquiry:
			if !f.opts.StandardCollateral {
				return quickfix.UnsupportedMessageType()
			}
		}
	}
	m := quickfix.NewMessage()
	msg.CopyInto(m)
	switch mt {
	case fixwire.MsgNewOrderSingle, fixwire.MsgOrderCancelReplace, fixwire.MsgOrderCancelRequest:
		if mt == fixwire.MsgOrderCancelRequest && !f.opts.Strict {
			f.log.Warn().Str("login", s.login).Str("msg_type", mt).Msg("fix: unsupported message type")
			return quickfix.UnsupportedMessageType()
		}
		if f.opts.OnOrder != nil {
			clOrdID, _ := m.Body.GetString(fixwire.TagClOrdID)
			f.opts.OnOrder(s.login, clOrdID)
		}
		go func() {
			s.inflight.RLock()
			defer s.inflight.RUnlock()
			s.order(mt, m)
		}()
	case fixwire.MsgOrderStatusRequest:
		go s.orderStatus(m)
	case fixwire.MsgSecurityListRequest:
		go s.securityList(m)
	case fixwire.MsgRequestForPositions:
		go s.positions(m)
	case fixwire.MsgCollateralInquiry:
		go s.account(m)
	default:
		f.log.Warn().Str("login", s.login).Str("msg_type", mt).Msg("fix: unsupported message type")
		return quickfix.UnsupportedMessageType()
	}
	return nil
}
