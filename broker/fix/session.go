package fix

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/quickfixgo/quickfix"
	"github.com/quickfixgo/quickfix/config"
	"github.com/rs/zerolog"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/broker/fix/fixwire"
)

// session is one account's FIX session. Its run loop owns the quickfixgo initiator: one
// per connection attempt, so the backoff between attempts is ours.
type session struct {
	b     *Broker
	creds broker.Credentials // the password is needed for every re-logon; never logged
	// dialect is the account's, else the node's; feat what it lets the session use.
	dialect fixwire.Dialect
	feat    fixwire.Features
	// symList is the configured list where the dialect has no SecurityList: the account's,
	// else the node's.
	symList []Symbol
	// noCollateral: the venue refused CollateralInquiry as unsupported (a dialect where it
	// is optional); Account no longer asks it.
	noCollateral atomic.Bool
	// posMode is the account's position mode (Credentials.FIX.PositionMode), else the
	// node's (Config.PositionMode), else netting: what the venue's accounts are where the
	// dialect cannot ask (fix44).
	posMode broker.AccountMode
	id      quickfix.SessionID
	set     *quickfix.Settings
	log     zerolog.Logger

	mu       sync.Mutex
	loggedOn bool
	up       chan struct{} // closed when logged on; replaced when the logon ends
	down     chan struct{} // closed when the current logon ends
	ended    error         // set when the session will not log on again
	closed   bool
	pending  map[string]*call
	// sentSeq maps the MsgSeqNum (34) of every message a pending request sent, in the
	// current logon, to the request: a venue's Reject (3) names only that (RefSeqNum 45),
	// a BusinessMessageReject (j) may too.
	sentSeq map[int]sentRef
	feeds   map[string]*feed
	syms    *symbolTable // of the current logon
	symsAt  time.Time    // when syms was read
	// symLoading is the symbol list read under way, if any.
	symLoading *symLoad
	// fence is the latest order's (or Fence's): the venue's own reports are recorded
	// under it.
	fence broker.Order

	// bookMu serialises the session's changes of the position book and of the protective
	// orders that go with them (a fill and its follow-up orders, a venue's report).
	bookMu sync.Mutex

	events  chan sessEvent
	closeCh chan struct{}
	done    chan struct{}
}

type sessEvent struct {
	kind int // evLogon, evDown, evRefused, evFailed
	text string
}

const (
	evLogon = iota + 1
	evDown
	evRefused
	evFailed
)

var _ broker.Session = (*session)(nil)

func newSession(b *Broker, creds broker.Credentials) (*session, error) {
	cfg := b.cfg
	host, port, _ := net.SplitHostPort(cfg.Addr)
	ids, err := accountIDs(creds, cfg)
	if err != nil {
		return nil, err
	}
	if err := checkLogon(creds); err != nil {
		return nil, err
	}
	dialect, posMode, err := accountDialect(creds, cfg)
	if err != nil {
		return nil, err
	}
	symbols, err := sessionSymbols(creds, cfg)
	if err != nil {
		return nil, err
	}
	set := quickfix.NewSettings()
	ss := quickfix.NewSessionSettings()
	ss.Set(config.BeginString, fixwire.BeginString)
	ss.Set(config.SenderCompID, ids.SenderCompID)
	ss.Set(config.TargetCompID, ids.TargetCompID)
	if ids.SenderSubID != "" {
		ss.Set(config.SenderSubID, ids.SenderSubID)
	}
	if ids.TargetSubID != "" {
		ss.Set(config.TargetSubID, ids.TargetSubID)
	}
	// The qualifier keeps sessions of one process apart: quickfixgo registers sessions
	// process-wide, and several Brokers (nodes of a demo, tests) may connect one account.
	// It never goes on the wire.
	qual := uuid.NewString()
	ss.Set(config.SessionQualifier, qual)
	ss.Set(config.SocketConnectHost, host)
	ss.Set(config.SocketConnectPort, port)
	ss.Set(config.HeartBtInt, strconv.Itoa(int(cfg.Heartbeat/time.Second)))
	ss.Set(config.ReconnectInterval, "24h") // reconnects are ours (backoff), not quickfixgo's
	ss.Set(config.LogonTimeout, cfg.LogonTimeout.String())
	ss.Set(config.LogoutTimeout, "1s")
	ss.Set(config.ResetOnLogon, "Y") // cTrader resets sequence numbers on every logon
	ss.Set(config.ResetOnLogout, "Y")
	ss.Set(config.ResetOnDisconnect, "Y")
	// Nothing is ever resent (state is recovered by requests, not ResendRequest): keep no
	// copy of sent messages.
	ss.Set(config.PersistMessages, "N")
	if cfg.TLS {
		ss.Set(config.SocketUseSSL, "Y")
		if cfg.TLSServerName != "" {
			ss.Set(config.SocketServerName, cfg.TLSServerName)
		}
		if cfg.TLSInsecureSkipVerify {
			ss.Set(config.SocketInsecureSkipVerify, "Y")
		}
	}
	id, err := set.AddSession(ss)
	if err != nil {
		return nil, broker.NewError(broker.ErrPermanent, broker.CodeInvalidRequest, "fix: session settings: %v", err)
	}
	s := &session{
		b: b, creds: creds, id: id, set: set, dialect: dialect, feat: dialect.Features(), symList: symbols, posMode: posMode,
		log:     cfg.Log.With().Str("login", creds.Login).Logger(),
		up:      make(chan struct{}),
		down:    make(chan struct{}),
		pending: map[string]*call{},
		sentSeq: map[int]sentRef{},
		feeds:   map[string]*feed{},
		events:  make(chan sessEvent, 16),
		closeCh: make(chan struct{}),
		done:    make(chan struct{}),
	}
	return s, nil
}

// run connects, logs on and reconnects with exponential backoff until Close or a refused
// logon. The outcome of the first attempt goes to first.
func (s *session) run(first chan<- error) {
	defer close(s.done)
	report := func(err error) {
		if first != nil {
			first <- err
			first = nil
		}
	}
	delay := s.b.cfg.ReconnectMin
	for {
		ini, err := quickfix.NewInitiator(s, quickfix.NewMemoryStoreFactory(), s.set, logFactory{s})
		if err == nil {
			err = ini.Start()
		}
		if err != nil {
			err = broker.NewError(broker.ErrPermanent, broker.CodeInvalidRequest, "fix: initiator: %v", err)
			s.end(err)
			report(err)
			return
		}
		ev, closing := s.attempt(func() { report(nil) })
		ini.Stop()
		s.setDown()
		s.drainEvents()
		switch {
		case closing, ev.kind == evLogon:
		case ev.kind == evRefused:
			s.b.health.failed(fmt.Errorf("logon refused: %s", ev.text))
		default:
			s.b.health.failed(fmt.Errorf("cannot log on: %s", ev.text))
		}
		switch {
		case closing:
			s.end(errClosed())
			report(errClosed())
			return
		case ev.kind == evRefused:
			err := broker.NewError(broker.ErrPermanent, broker.CodeAuthFailed, "fix: logon refused: %s", ev.text)
			s.log.Warn().Str("reason", ev.text).Msg("fix logon refused")
			s.end(err)
			report(err)
			return
		case ev.kind == evLogon: // logged on, then the session ended
			delay = s.b.cfg.ReconnectMin
		case first != nil:
			err := broker.NewError(broker.ErrDisconnected, broker.CodeNoConnection, "fix: cannot log on to %s: %s", s.b.cfg.Addr, ev.text)
			s.end(err)
			report(err)
			return
		}
		s.log.Info().Dur("backoff", delay).Str("reason", ev.text).Msg("fix session down; reconnecting")
		select {
		case <-time.After(delay):
		case <-s.closeCh:
			s.end(errClosed())
			return
		}
		delay = min(2*delay, s.b.cfg.ReconnectMax)
	}
}

// attempt waits for one connection attempt to end; onLogon runs when it logs on. It
// returns the last event (evLogon when the session was logged on before it ended) or
// closing.
func (s *session) attempt(onLogon func()) (sessEvent, bool) {
	timer := time.NewTimer(s.b.cfg.LogonTimeout + time.Second)
	defer timer.Stop()
	loggedOn := false
	for {
		select {
		case <-s.closeCh:
			return sessEvent{}, true
		case <-timer.C:
			if !loggedOn {
				return sessEvent{kind: evFailed, text: "no logon reply"}, false
			}
		case ev := <-s.events:
			switch ev.kind {
			case evLogon:
				loggedOn = true
				s.setUp()
				onLogon()
			case evDown, evFailed:
				if loggedOn {
					return sessEvent{kind: evLogon, text: "session ended"}, false
				}
				return ev, false
			case evRefused:
				return ev, false
			}
		}
	}
}

func (s *session) drainEvents() {
	for {
		select {
		case <-s.events:
		default:
			return
		}
	}
}

func (s *session) event(ev sessEvent) {
	select {
	case s.events <- ev:
	default: // the loop is behind; a later event says the same
	}
}

// setUp marks the session logged on.
func (s *session) setUp() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.loggedOn {
		return
	}
	s.loggedOn = true
	s.down = make(chan struct{})
	close(s.up)
	s.b.health.loggedOn()
}

// setDown marks the logon ended: pending calls fail, feeds close, symbols are read again
// on the next logon.
func (s *session) setDown() {
	s.mu.Lock()
	if !s.loggedOn {
		s.mu.Unlock()
		return
	}
	s.loggedOn = false
	s.up = make(chan struct{})
	close(s.down)
	if s.closed {
		s.b.health.loggedOff(nil)
	} else {
		s.b.health.loggedOff(errors.New("a session's logon ended"))
	}
	feeds := s.feeds
	s.feeds = map[string]*feed{}
	s.syms = nil
	clear(s.sentSeq) // sequence numbers start again with the next logon
	s.mu.Unlock()
	for _, f := range feeds {
		f.close()
	}
}

// end marks the session as never logging on again.
func (s *session) end(err error) {
	s.mu.Lock()
	if s.ended == nil {
		s.ended = err
	}
	up := s.up
	s.mu.Unlock()
	select {
	case <-up:
	default:
		// Wake callers waiting for a logon that will not come.
		s.mu.Lock()
		if !s.loggedOn {
			close(s.up)
		}
		s.mu.Unlock()
	}
}

// Close implements broker.Session: logs out, closes feeds; later calls fail with
// ErrDisconnected.
func (s *session) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		<-s.done
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	close(s.closeCh)
	<-s.done
	return nil
}

// waitUp waits until the session is logged on and returns the channel that closes when
// that logon ends.
func (s *session) waitUp(ctx context.Context) (<-chan struct{}, error) {
	for {
		s.mu.Lock()
		switch {
		case s.closed:
			s.mu.Unlock()
			return nil, errClosed()
		case s.loggedOn:
			down := s.down
			s.mu.Unlock()
			return down, nil
		case s.ended != nil:
			err := s.ended
			s.mu.Unlock()
			return nil, fmt.Errorf("%w: %w", broker.NewError(broker.ErrDisconnected, broker.CodeNoConnection, "fix: session ended"), err)
		}
		up := s.up
		s.mu.Unlock()
		select {
		case <-up:
		case <-ctx.Done():
			return nil, notSent("request (not logged on)", ctx.Err())
		case <-s.closeCh:
			return nil, errClosed()
		}
	}
}

// call collects the replies of one request.
type call struct {
	mu     sync.Mutex
	msgs   []*quickfix.Message
	notify chan struct{}
	seqs   []int  // MsgSeqNums of the messages it sent (guarded by session.mu)
	last   string // the type of the last message it sent (guarded by session.mu)
}

// sentRef is what a sent message was: the request id it is pending under and its type.
type sentRef struct {
	id, msgType string
}

func (c *call) push(m *quickfix.Message) {
	c.mu.Lock()
	c.msgs = append(c.msgs, m)
	c.mu.Unlock()
	select {
	case c.notify <- struct{}{}:
	default:
	}
}

func (c *call) take() []*quickfix.Message {
	c.mu.Lock()
	defer c.mu.Unlock()
	ms := c.msgs
	c.msgs = nil
	return ms
}

// request sends m, registered under id, and feeds its replies to handle until handle says
// done. An order that gets no final reply (timeout, dropped session, ended context) has an
// unknown outcome; any other request is simply not answered (ErrDisconnected).
func (s *session) request(ctx context.Context, id string, m *quickfix.Message, order bool, handle func(*quickfix.Message) (bool, error)) error {
	if err := ctx.Err(); err != nil {
		return notSent("request", err)
	}
	down, err := s.waitUp(ctx)
	if err != nil {
		return err
	}
	c := &call{notify: make(chan struct{}, 1)}
	s.mu.Lock()
	if !s.loggedOn {
		s.mu.Unlock()
		return broker.NewError(broker.ErrDisconnected, broker.CodeNoConnection, "fix: session down")
	}
	s.pending[id] = c
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		if s.pending[id] == c {
			delete(s.pending, id)
		}
		for _, n := range c.seqs {
			delete(s.sentSeq, n)
		}
		s.mu.Unlock()
	}()
	if err := quickfix.SendToTarget(m, s.id); err != nil {
		return fmt.Errorf("%w: %w", broker.NewError(broker.ErrDisconnected, broker.CodeNoConnection, "fix: send failed"), err)
	}
	timeout := s.b.cfg.ReplyTimeout
	if d, ok := ctx.Value(replyTimeoutKey{}).(time.Duration); ok {
		timeout = d
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	lost := func(why string) error {
		if order {
			return broker.NewError(broker.ErrUnknownOutcome, broker.CodeTimeout, "fix: %s while the order was in flight; it may have executed", why)
		}
		return broker.NewError(broker.ErrDisconnected, broker.CodeNoConnection, "fix: %s before the reply", why)
	}
	// A refusal of the message (Reject, BusinessMessageReject) ends any request at once;
	// every other reply goes to handle.
	handleAll := func() (bool, error) {
		for _, r := range c.take() {
			if err := refusal(r); err != nil {
				return true, err
			}
			if done, err := handle(r); done {
				return true, err
			}
		}
		return false, nil
	}
	for {
		if done, err := handleAll(); done {
			return err
		}
		select {
		case <-c.notify:
		case <-down:
			if done, err := handleAll(); done {
				return err
			}
			return lost("session dropped")
		case <-ctx.Done():
			return fmt.Errorf("%w: %w", lost("context ended"), ctx.Err())
		case <-timer.C:
			return fmt.Errorf("%w: %w", lost("no reply within "+timeout.String()), errNoReply)
		}
	}
}

// tagRaw holds, in a received message handed to a request, the raw message (never sent).
const tagRaw quickfix.Tag = 1 << 30

// refusedError is the venue's refusal of one message we sent (Reject or
// BusinessMessageReject): msgType is the refused message's type (35). It unwraps to the
// classified error.
type refusedError struct {
	msgType string
	err     error
}

func (e *refusedError) Error() string { return e.err.Error() }
func (e *refusedError) Unwrap() error { return e.err }

// refusal returns the classified error of a Reject (3) or BusinessMessageReject (j), nil
// for any other message. A refused message was not processed: nothing executed, so the
// error is definite — the dialect's class when the venue sends one, else by the reason:
// a reject that says the venue cannot serve the request now (application or firm not
// available) is retryable, anything else (unsupported type, a tag the venue does not
// know, a missing field) permanent, as resending it would be refused again.
func refusal(r *quickfix.Message) error {
	mt, _ := r.MsgType()
	if mt != fixwire.MsgReject && mt != fixwire.MsgBusinessMessageReject {
		return nil
	}
	refType := str(r, fixwire.TagRefMsgType)
	text := str(r, fixwire.TagText)
	var err error
	switch {
	case str(r, fixwire.TagErrorClass) != "" || str(r, fixwire.TagErrorCode) != "":
		err = replyError(r)
	case mt == fixwire.MsgBusinessMessageReject && fixwire.BizRejectRetryable(str(r, fixwire.TagBizRejReason)):
		err = broker.NewError(broker.ErrRetryable, broker.CodeServerBusy, "fix: the venue cannot serve %s now (BusinessRejectReason %s): %s",
			fixwire.MsgTypeName(refType), str(r, fixwire.TagBizRejReason), text)
	case mt == fixwire.MsgBusinessMessageReject:
		err = broker.NewError(broker.ErrPermanent, broker.CodeInvalidRequest, "fix: the venue refused %s (BusinessRejectReason %s): %s",
			fixwire.MsgTypeName(refType), str(r, fixwire.TagBizRejReason), text)
	default:
		why := ""
		if v := str(r, fixwire.TagSessionRejReason); v != "" {
			why += " (SessionRejectReason " + v + ")"
		}
		if v := str(r, fixwire.TagRefTagID); v != "" {
			why += " (tag " + v + ")"
		}
		err = broker.NewError(broker.ErrPermanent, broker.CodeInvalidRequest, "fix: the venue rejected %s%s: %s", fixwire.MsgTypeName(refType), why, text)
	}
	return &refusedError{msgType: refType, err: err}
}

// errNoReply marks a request that got no reply in time (the session still up).
var errNoReply = errors.New("no reply")

// replyTimeoutKey overrides Config.ReplyTimeout for one request (a context value).
type replyTimeoutKey struct{}

// deliver hands a reply to the request registered under id; false when there is none.
func (s *session) deliver(id string, m *quickfix.Message) bool {
	s.mu.Lock()
	c := s.pending[id]
	s.mu.Unlock()
	if c == nil {
		return false
	}
	c.push(m)
	return true
}

// OnCreate implements quickfix.Application.
func (s *session) OnCreate(quickfix.SessionID) {}

// OnLogon implements quickfix.Application.
func (s *session) OnLogon(quickfix.SessionID) {
	s.log.Debug().Msg("fix logon")
	s.event(sessEvent{kind: evLogon})
}

// OnLogout implements quickfix.Application.
func (s *session) OnLogout(quickfix.SessionID) {
	s.setDown()
	s.event(sessEvent{kind: evDown, text: "logged out"})
}

// ToAdmin implements quickfix.Application: the Logon carries the credentials (and the
// venue's token).
func (s *session) ToAdmin(m *quickfix.Message, _ quickfix.SessionID) {
	if m.IsMsgTypeOf(fixwire.MsgLogon) {
		m.Body.SetString(fixwire.TagUsername, logonUser(s.creds))
		m.Body.SetString(fixwire.TagPassword, s.creds.Password)
		if t := s.b.cfg.Token; t != "" {
			m.Body.SetInt(fixwire.TagRawDataLength, len(t))
			m.Body.SetString(fixwire.TagRawData, t)
		}
	}
	if s.b.wire != nil {
		s.b.wire(m.String())
	}
}

// ToApp implements quickfix.Application: it runs as a message gets its sequence number,
// before it is written, and remembers that number for the pending request the message
// belongs to, so a Reject naming only the number (45) finds the request.
func (s *session) ToApp(m *quickfix.Message, _ quickfix.SessionID) error {
	mt, _ := m.MsgType()
	id := str(m, fixwire.RequestIDTag(mt))
	seq, err := m.Header.GetInt(fixwire.TagMsgSeqNum)
	if id != "" && err == nil {
		s.mu.Lock()
		if c := s.pending[id]; c != nil {
			c.seqs = append(c.seqs, seq)
			c.last = mt
			s.sentSeq[seq] = sentRef{id: id, msgType: mt}
		}
		s.mu.Unlock()
	}
	if s.b.wire != nil {
		s.b.wire(m.String())
	}
	return nil
}

// refused hands a Reject (3) or BusinessMessageReject (j) to the request whose message
// it names: by BusinessRejectRefID (379) when it has one, else by RefSeqNum (45). The
// referenced message type (372) is filled in from what was sent when the venue left it
// out. False when no pending request sent it.
func (s *session) refused(m *quickfix.Message) bool {
	s.mu.Lock()
	ref, bySeq := sentRef{}, false
	if seq, err := m.Body.GetInt(fixwire.TagRefSeqNum); err == nil {
		ref, bySeq = s.sentSeq[seq]
	}
	if id := str(m, fixwire.TagBizRejRefID); id != "" && s.pending[id] != nil && (!bySeq || ref.id != id) {
		ref = sentRef{id: id, msgType: s.pending[id].last}
	}
	s.mu.Unlock()
	if ref.id == "" {
		return false
	}
	if str(m, fixwire.TagRefMsgType) == "" {
		m.Body.SetString(fixwire.TagRefMsgType, ref.msgType)
	}
	return s.deliver(ref.id, m)
}

// FromAdmin implements quickfix.Application: a Logout before the logon completed is the
// venue refusing it.
func (s *session) FromAdmin(m *quickfix.Message, _ quickfix.SessionID) quickfix.MessageRejectError {
	if m.IsMsgTypeOf(fixwire.MsgReject) {
		r := quickfix.NewMessage()
		m.CopyInto(r)
		if !s.refused(r) {
			s.log.Warn().Str("ref_seq_num", str(r, fixwire.TagRefSeqNum)).Str("text", str(r, fixwire.TagText)).
				Msg("fix: session Reject of a message no request is waiting for; ignored")
		}
		return nil
	}
	if m.IsMsgTypeOf(fixwire.MsgLogout) {
		text, _ := m.Body.GetString(fixwire.TagText)
		s.mu.Lock()
		on := s.loggedOn
		s.mu.Unlock()
		if !on {
			s.event(sessEvent{kind: evRefused, text: text})
		} else {
			s.log.Info().Str("reason", text).Msg("fix logout from the venue")
		}
	}
	return nil
}

// FromApp implements quickfix.Application: replies go to their request, feed reports to
// their subscription; anything else is logged and ignored (the session keeps running).
func (s *session) FromApp(msg *quickfix.Message, _ quickfix.SessionID) quickfix.MessageRejectError {
	m := quickfix.NewMessage()
	msg.CopyInto(m)
	mt, _ := m.MsgType()
	if mt == fixwire.MsgSecurityList {
		// Groups are not parsed without a data dictionary: keep the raw message for them.
		m.Body.SetString(tagRaw, msg.String())
	}
	str := func(t quickfix.Tag) string { v, _ := m.Body.GetString(t); return v }
	switch mt {
	case fixwire.MsgExecutionReport:
		if id := str(fixwire.TagPosReqID); id != "" && str(fixwire.TagClOrdID) == "" {
			if s.feedReport(id, m) {
				return nil
			}
		}
		protective := !s.feat.OrderTags
		if ot := str(fixwire.TagOrdType); protective && str(fixwire.TagExecType) == fixwire.ExecTrade &&
			(ot == fixwire.OrdTypeStop || ot == fixwire.OrdTypeLimit) {
			// A resting protective order filled at the venue: never a request's answer
			// (those wait for New, Replaced or Canceled).
			go s.venueReport(m)
			return nil
		}
		if s.deliver(str(fixwire.TagClOrdID), m) {
			return nil
		}
		if protective {
			go s.venueReport(m)
			return nil
		}
		s.log.Warn().Str("clordid", str(fixwire.TagClOrdID)).Str("exec_type", str(fixwire.TagExecType)).
			Msg("fix: execution report for an order this session is not waiting for; ignored")
		return nil
	case fixwire.MsgOrderCancelReject:
		if s.deliver(str(fixwire.TagClOrdID), m) {
			return nil
		}
	case fixwire.MsgRequestForPositionsAck:
		if s.deliver(str(fixwire.TagPosReqID), m) {
			return nil
		}
		if str(fixwire.TagPosReqStatus) == fixwire.PosReqStatusEnded || str(fixwire.TagPosReqStatus) == fixwire.PosStatusReject {
			s.endFeed(str(fixwire.TagPosReqID))
			return nil
		}
	case fixwire.MsgPositionReport:
		if s.deliver(str(fixwire.TagPosReqID), m) {
			return nil
		}
	case fixwire.MsgSecurityList:
		if s.deliver(str(fixwire.TagSecurityReqID), m) {
			return nil
		}
	case fixwire.MsgCollateralReport:
		if s.deliver(str(fixwire.TagCollInquiryID), m) {
			return nil
		}
	case fixwire.MsgBusinessMessageReject:
		if s.refused(m) {
			return nil
		}
		s.log.Warn().Str("ref_msg_type", str(fixwire.TagRefMsgType)).Str("text", str(fixwire.TagText)).
			Msg("fix: BusinessMessageReject of a message no request is waiting for; ignored")
		return nil
	}
	// Mostly late replies to requests whose callers gave up.
	s.log.Debug().Str("msg_type", mt).Msg("fix: reply to no pending request; ignored")
	return nil
}

// logFactory turns quickfixgo's session events into run-loop events (a failed dial ends
// an attempt at once) and discards message logs: nothing is written to disk.
type logFactory struct{ s *session }

func (f logFactory) Create() (quickfix.Log, error) { return sessLog(f), nil }
func (f logFactory) CreateSessionLog(quickfix.SessionID) (quickfix.Log, error) {
	return sessLog(f), nil
}

type sessLog struct{ s *session }

func (sessLog) OnIncoming([]byte)  {}
func (sessLog) OnOutgoing([]byte)  {}
func (l sessLog) OnEvent(e string) { l.onEvent(e) }
func (l sessLog) OnEventf(format string, args ...any) {
	l.onEvent(fmt.Sprintf(format, args...))
}

func (l sessLog) onEvent(e string) {
	switch {
	case strings.HasPrefix(e, "Invalid Session State: Received Msg") && strings.Contains(e, "\x0135=5\x01"):
		// quickfixgo does not pass a Logout received in reply to our Logon to FromAdmin;
		// its log event is how the refusal and its reason (58) are seen.
		l.s.event(sessEvent{kind: evRefused, text: soh(e, "58")})
	case strings.HasPrefix(e, "Failed to connect"), strings.HasPrefix(e, "Failed handshake"):
		l.s.event(sessEvent{kind: evFailed, text: e})
	case e == "Disconnected", strings.HasPrefix(e, "Failed to initiate"):
		l.s.event(sessEvent{kind: evDown, text: e})
	}
}

// soh returns the value of tag in a raw FIX message embedded in s ("" when absent).
func soh(s, tag string) string {
	_, v, ok := strings.Cut(s, "\x01"+tag+"=")
	if !ok {
		return ""
	}
	v, _, _ = strings.Cut(v, "\x01")
	return v
}

// Header ids are the session ids of an account's FIX header.
type headerIDs struct {
	SenderCompID, SenderSubID, TargetCompID, TargetSubID string
}

// accountIDs returns an account's FIX header ids. The account's own FIX session settings
// (Credentials.FIX: the console's "FIX session" fields, "fix" in the JSON API) come first;
// when any of them is set, the server field is not read (it is only the account's label).
// An account without them may carry the ids in its server field, the legacy syntax kept
// for accounts configured before the settings existed:
//
//	""                                   nothing (SenderCompID = login)
//	"SENDER"                             cTrader's "<environment>.<broker>.<login>"
//	"SENDER/SENDERSUB@TARGET/TARGETSUB"  any part may be left out: "SENDER@TARGET", "@TARGET/TRADE"
//
// What neither names comes from the Config; SenderCompID defaults to the login. Every id
// goes into the header as it is, so an id with a space, '=' or a control character (SOH
// above all) is refused, naming the setting, before anything is sent.
func accountIDs(c broker.Credentials, cfg Config) (headerIDs, error) {
	ids := headerIDs{SenderCompID: cfg.SenderCompID, SenderSubID: cfg.SenderSubID, TargetCompID: cfg.TargetCompID, TargetSubID: cfg.TargetSubID}
	f := c.FIX
	f.Dialect, f.Symbols, f.PositionMode = "", nil, "" // no header ids: an account with only these still reads the server field
	if !f.IsZero() {
		for _, v := range []struct{ name, value string }{{"SenderCompID", f.SenderCompID}, {"SenderSubID", f.SenderSubID},
			{"TargetCompID", f.TargetCompID}, {"TargetSubID", f.TargetSubID}, {"Username", f.Username}} {
			if err := checkID("account FIX setting "+v.name, v.value); err != nil {
				return ids, err
			}
		}
		ids.SenderCompID = cmp.Or(f.SenderCompID, ids.SenderCompID)
		ids.SenderSubID = cmp.Or(f.SenderSubID, ids.SenderSubID)
		ids.TargetCompID = cmp.Or(f.TargetCompID, ids.TargetCompID)
		ids.TargetSubID = cmp.Or(f.TargetSubID, ids.TargetSubID)
	} else if c.Server != "" {
		if checkID("", c.Server) != nil || strings.Count(c.Server, "@") > 1 {
			return ids, broker.NewError(broker.ErrPermanent, broker.CodeInvalidRequest,
				"fix: account server field %q: the account has no FIX session settings, so the server field is read as the legacy SENDER[/SENDERSUB][@TARGET[/TARGETSUB]] (no spaces, '=' or control characters); set the account's FIX session settings instead", c.Server)
		}
		sender, target, hasTarget := strings.Cut(c.Server, "@")
		split := func(s string) (string, string) { a, b, _ := strings.Cut(s, "/"); return a, b }
		comp, sub := split(sender)
		ids.SenderCompID = cmp.Or(comp, ids.SenderCompID)
		ids.SenderSubID = cmp.Or(sub, ids.SenderSubID)
		if hasTarget {
			comp, sub = split(target)
			ids.TargetCompID = cmp.Or(comp, ids.TargetCompID)
			ids.TargetSubID = cmp.Or(sub, ids.TargetSubID)
		}
	}
	if ids.SenderCompID == "" {
		if err := checkID("login (the default SenderCompID)", c.Login); err != nil {
			return ids, err
		}
		ids.SenderCompID = c.Login
	}
	return ids, nil
}

// accountDialect returns the account's dialect, else the node's, and its position mode,
// the account's, else the node's (zero: netting), and refuses, before anything is sent, a
// configuration that cannot work: an unknown dialect or position mode, a dialect without
// SecurityList and no configured symbol list (the account's or the node's), or a hedging
// account in a dialect that closes by opposite orders (fix44).
func accountDialect(c broker.Credentials, cfg Config) (fixwire.Dialect, broker.AccountMode, error) {
	d, err := fixwire.ParseDialect(c.FIX.Dialect)
	if err != nil {
		return "", 0, broker.NewError(broker.ErrPermanent, broker.CodeInvalidRequest, "fix: account setting: %v", err)
	}
	d = d.Or(cfg.Dialect).Or(fixwire.DefaultDialect)
	if !d.Features().SecurityList && len(c.FIX.Symbols) == 0 && len(cfg.Symbols) == 0 {
		return "", 0, broker.NewError(broker.ErrPermanent, broker.CodeInvalidRequest,
			"fix: the %s dialect has no SecurityList: configure the venue's symbols (the account's FIX symbol list, its platform's, or the node's: fix.Config.Symbols, --broker 'fix://…?symbols=FILE')", d)
	}
	mode, err := ParsePositionMode(c.FIX.PositionMode)
	if err != nil {
		return "", 0, broker.NewError(broker.ErrPermanent, broker.CodeInvalidRequest, "fix: account FIX setting position_mode: %v", err)
	}
	if mode == 0 {
		mode = cfg.PositionMode
	}
	if err := checkPositionMode(d, mode); err != nil {
		return "", 0, broker.NewError(broker.ErrPermanent, broker.CodeInvalidRequest, "%v", err)
	}
	if mode == 0 {
		mode = broker.Netting
	}
	return d, mode, nil
}

// logonUser returns the Logon's user name (553): the account's FIX setting, else its login.
func logonUser(c broker.Credentials) string { return cmp.Or(c.FIX.Username, c.Login) }

// checkLogon refuses credentials that cannot go into a Logon as they are: a user name with
// a space, '=' or a control character, or a password with SOH (the field separator; a
// password may hold any other character).
func checkLogon(c broker.Credentials) error {
	if err := checkID("logon user name (553)", logonUser(c)); err != nil {
		return err
	}
	if strings.ContainsRune(c.Password, '\x01') {
		return broker.NewError(broker.ErrPermanent, broker.CodeInvalidRequest, "fix: the account's password contains SOH (0x01), which FIX cannot carry")
	}
	return nil
}

// checkID refuses a header id or user name with a space, '=' or a control character (SOH
// above all): each goes into the message as it is. what names it in the error.
func checkID(what, v string) error {
	if i := strings.IndexFunc(v, func(r rune) bool { return r <= ' ' || r == '=' || r == 0x7f }); i >= 0 {
		return broker.NewError(broker.ErrPermanent, broker.CodeInvalidRequest,
			"fix: %s %q: spaces, '=' and control characters (SOH) are not allowed (at byte %d)", what, v, i)
	}
	return nil
}
