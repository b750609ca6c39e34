package fix_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/broker/fix"
	"github.com/snapcopier/copier/broker/sim/fixfront"
	"github.com/snapcopier/copier/internal/testwait"
)

const limit = 30 * time.Second

func connect(t *testing.T, e *env, login string) broker.Session {
	t.Helper()
	s, err := e.broker.Connect(t.Context(), broker.Credentials{Login: login, Password: "pw"})
	if err != nil {
		t.Fatalf("connect %s: %v", login, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func firstSymbol(t *testing.T, s broker.Session) broker.SymbolSpec {
	t.Helper()
	specs, err := s.Symbols(t.Context())
	if err != nil || len(specs) == 0 {
		t.Fatalf("symbols: %v %v", specs, err)
	}
	return specs[0]
}

func wantClass(t *testing.T, err error, class error) {
	t.Helper()
	if got := broker.ClassOf(err); got != class {
		t.Fatalf("error %v has class %v, want %v", err, got, class)
	}
}

// Every logon starts the sequence numbers again (cTrader): a dropped session logs on anew
// with MsgSeqNum 1 and ResetSeqNumFlag, and the session works again without a resend.
func TestSequenceResetOnLogon(t *testing.T) {
	e := newEnv(t, envOptions{})
	s := connect(t, e, "seq")
	sym := firstSymbol(t, s)
	if _, err := s.Open(t.Context(), broker.OpenRequest{Order: order(), Symbol: sym.Name, Side: broker.Buy, Volume: sym.MinLot}); err != nil {
		t.Fatal(err)
	}
	if n := e.front.Drop("seq"); n != 1 {
		t.Fatalf("dropped %d sessions, want 1", n)
	}
	testwait.For(t, "a second logon", limit, func() (bool, string) {
		return len(e.front.Logons()) == 2, fmt.Sprintf("logons %+v", e.front.Logons())
	})
	for _, l := range e.front.Logons() {
		if l.Login != "seq" || l.MsgSeqNum != 1 || !l.ResetSeqNo {
			t.Fatalf("logon %+v: want MsgSeqNum 1 with ResetSeqNumFlag", l)
		}
	}
	ps, err := s.Positions(t.Context())
	if err != nil || len(ps) != 1 {
		t.Fatalf("after the reconnect: positions %+v, %v", ps, err)
	}
}

func order() broker.Order {
	return broker.Order{RequestID: uuid.New(), Token: 1, Node: "fix-test"}
}

// An order whose reply is lost has an unknown outcome; sent again with the same request
// id it carries the same ClOrdID with PossResend, and the venue reports its status
// instead of trading twice.
func TestResendWithPossResend(t *testing.T) {
	// No status request after the lost reply: the outcome stays unknown.
	e := newEnv(t, envOptions{client: fix.Config{ReplyTimeout: 300 * time.Millisecond, StatusTimeout: -1}})
	s := connect(t, e, "resend")
	sym := firstSymbol(t, s)
	ctx := t.Context()
	for i := range 6 { // the simulator loses the request or the reply, seeded: try both
		if err := e.sim.SetFaults(ctx, "resend", broker.Faults{TimeoutRate: 1}); err != nil {
			t.Fatal(err)
		}
		req := broker.OpenRequest{Order: order(), Symbol: sym.Name, Side: broker.Buy, Volume: sym.MinLot}
		_, err := s.Open(ctx, req)
		wantClass(t, err, broker.ErrUnknownOutcome)
		if err := e.sim.SetFaults(ctx, "resend", broker.Faults{}); err != nil {
			t.Fatal(err)
		}
		res, err := s.Open(ctx, req)
		if err != nil {
			t.Fatalf("resend %d: %v", i, err)
		}
		again, err := s.Open(ctx, req)
		if err != nil || again.Ticket != res.Ticket {
			t.Fatalf("second resend %d: %+v, %v; want ticket %d", i, again, err, res.Ticket)
		}
		ps, err := s.Positions(ctx)
		if err != nil || len(ps) != i+1 {
			t.Fatalf("after resend %d: %d positions (%v), want %d", i, len(ps), err, i+1)
		}
	}
	// The same ClOrdID without PossResend is a duplicate the venue refuses; the broker
	// never sends that, a raw client can (TestFrontBadInput).
}

// An order whose reply is lost is followed by an OrderStatusRequest: the venue knows
// whether it executed, so the caller gets the fill or a final "not executed" instead of
// an unknown outcome.
func TestStatusRequestAfterLostReply(t *testing.T) {
	e := newEnv(t, envOptions{client: fix.Config{ReplyTimeout: 300 * time.Millisecond}})
	s := connect(t, e, "status")
	sym := firstSymbol(t, s)
	ctx := t.Context()
	if err := e.sim.SetFaults(ctx, "status", broker.Faults{TimeoutRate: 1}); err != nil {
		t.Fatal(err)
	}
	filled, lost := 0, 0
	for range 8 { // the simulator loses the request or the reply, seeded: both happen
		_, err := s.Open(ctx, broker.OpenRequest{Order: order(), Symbol: sym.Name, Side: broker.Buy, Volume: sym.MinLot})
		switch broker.ClassOf(err) {
		case nil:
			filled++
		case broker.ErrDisconnected:
			lost++
		default:
			t.Fatalf("open with a lost reply: %v, want a fill or a final not-executed", err)
		}
	}
	ps, err := e.sim.AccountPositions(ctx, "status")
	if err != nil || len(ps) != filled {
		t.Fatalf("%d fills reported, positions %+v (%v)", filled, ps, err)
	}
	if filled == 0 || lost == 0 {
		t.Logf("only one branch was drawn: %d filled, %d lost", filled, lost)
	}
}

// A refused logon is permanent, with the venue's reason; the node keeps connecting others.
func TestLogonRefused(t *testing.T) {
	e := newEnv(t, envOptions{})
	if err := e.sim.Provision(t.Context(), broker.AccountSpec{Login: "locked", Password: "right", Balance: 1000}); err != nil {
		t.Fatal(err)
	}
	_, err := e.broker.Connect(t.Context(), broker.Credentials{Login: "locked", Password: "wrong"})
	wantClass(t, err, broker.ErrPermanent)
	var te *broker.TradeError
	if !errors.As(err, &te) || te.Code != broker.CodeAuthFailed || !strings.Contains(err.Error(), "password") {
		t.Fatalf("bad password: %v, want CodeAuthFailed naming the password", err)
	}

	other, err := fix.New(fix.Config{Addr: e.front.Addr(), TargetCompID: "someoneElse"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = other.Connect(t.Context(), broker.Credentials{Login: "locked", Password: "right"})
	wantClass(t, err, broker.ErrPermanent)
	if !strings.Contains(err.Error(), "TargetCompID") {
		t.Fatalf("wrong TargetCompID: %v, want the reason", err)
	}
	s, err := e.broker.Connect(t.Context(), broker.Credentials{Login: "locked", Password: "right"})
	if err != nil {
		t.Fatalf("good logon after refused ones: %v", err)
	}
	_ = s.Close()

	if _, err := fix.New(fix.Config{Addr: "no-port"}); err == nil {
		t.Fatal("a venue address without a port was accepted")
	}
	dead, _ := fix.New(fix.Config{Addr: "127.0.0.1:1"})
	_, err = dead.Connect(t.Context(), broker.Credentials{Login: "x", Password: "y"})
	wantClass(t, err, broker.ErrDisconnected)
}

// A session that drops while an order is in flight leaves the order's outcome unknown;
// the session logs on again and a resend learns what happened, trading at most once.
func TestSessionDroppedMidOrder(t *testing.T) {
	arrived := make(chan string, 4)
	e := newEnv(t, envOptions{front: fixfront.Options{OnOrder: func(login, _ string) {
		if login == "drop" {
			arrived <- login
		}
	}}})
	s := connect(t, e, "drop")
	sym := firstSymbol(t, s)
	ctx := t.Context()
	if err := e.sim.SetFaults(ctx, "drop", broker.Faults{Latency: 2 * time.Second}); err != nil {
		t.Fatal(err)
	}
	req := broker.OpenRequest{Order: order(), Symbol: sym.Name, Side: broker.Sell, Volume: sym.MinLot}
	done := make(chan error, 1)
	go func() {
		_, err := s.Open(ctx, req)
		done <- err
	}()
	select {
	case <-arrived:
	case <-time.After(limit):
		t.Fatal("the order never reached the front")
	}
	e.front.Drop("drop")
	select {
	case err := <-done:
		wantClass(t, err, broker.ErrUnknownOutcome)
	case <-time.After(limit):
		t.Fatal("the order did not end with the session")
	}
	if err := e.sim.SetFaults(ctx, "drop", broker.Faults{}); err != nil {
		t.Fatal(err)
	}
	res, err := s.Open(ctx, req) // waits for the new logon, resends with PossResend
	ps, perr := s.Positions(ctx)
	if perr != nil {
		t.Fatal(perr)
	}
	switch {
	case err == nil:
		if len(ps) != 1 || ps[0].Ticket != res.Ticket {
			t.Fatalf("resend filled ticket %d, positions %+v", res.Ticket, ps)
		}
	case broker.ClassOf(err) == broker.ErrDisconnected:
		// The venue never executed it (its server session closed with the connection).
		if len(ps) != 0 {
			t.Fatalf("resend says not executed, positions %+v", ps)
		}
	default:
		t.Fatalf("resend: %v", err)
	}
}

// rawConn speaks FIX by hand to the front.
type rawConn struct {
	t   *testing.T
	c   net.Conn
	r   *bufio.Reader
	seq int
}

func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_ = c.SetDeadline(time.Now().Add(limit))
	return &rawConn{t: t, c: c, r: bufio.NewReader(c)}
}

// send writes a message: begin string, type and body fields ("tag=value").
func (rc *rawConn) send(begin, msgType string, fields ...string) {
	rc.seq++
	body := fmt.Sprintf("35=%s\x0149=raw\x0156=cServer\x0134=%d\x0152=%s\x01", msgType, rc.seq, time.Now().UTC().Format("20060102-15:04:05.000"))
	for _, f := range fields {
		body += f + "\x01"
	}
	msg := fmt.Sprintf("8=%s\x019=%d\x01%s", begin, len(body), body)
	sum := 0
	for i := range len(msg) {
		sum += int(msg[i])
	}
	msg += fmt.Sprintf("10=%03d\x01", sum%256)
	if _, err := rc.c.Write([]byte(msg)); err != nil {
		rc.t.Fatal(err)
	}
}

// read returns the next message, or "" when the front closed the connection.
func (rc *rawConn) read() string {
	var b strings.Builder
	for {
		s, err := rc.r.ReadString('\x01')
		b.WriteString(s)
		if err != nil {
			return b.String()
		}
		if strings.HasPrefix(s, "10=") {
			return b.String()
		}
	}
}

// Bad input gets a clear reject or a closed connection, and the front keeps serving.
func TestFrontBadInput(t *testing.T) {
	e := newEnv(t, envOptions{})

	garbage := dialRaw(t, e.front.Addr())
	if _, err := garbage.c.Write([]byte("this is not FIX at all\r\n\x00\x01\x02")); err != nil {
		t.Fatal(err)
	}
	if m := garbage.read(); strings.Contains(m, "35=") {
		t.Fatalf("garbage got a FIX answer %q", m)
	}

	old := dialRaw(t, e.front.Addr())
	old.send("FIX.4.2", "A", "98=0", "108=30", "553=a", "554=pw")
	if m := old.read(); !strings.Contains(m, "35=5\x01") || !strings.Contains(m, "only FIX.4.4") {
		t.Fatalf("FIX.4.2 logon answered %q, want a Logout naming FIX.4.4", m)
	}

	rc := dialRaw(t, e.front.Addr())
	rc.send("FIX.4.4", "A", "98=0", "108=30", "141=Y", "553=raw", "554=pw")
	if m := rc.read(); !strings.Contains(m, "35=A\x01") {
		t.Fatalf("logon answered %q", m)
	}
	rc.send("FIX.4.4", "D", "11=bad-symbol", "55=99999", "54=1", "38=1000", "40=1", "60=20260101-00:00:00")
	if m := rc.read(); !strings.Contains(m, "35=8\x01") || !strings.Contains(m, "39=8\x01") || !strings.Contains(m, "103=1\x01") {
		t.Fatalf("unknown symbol answered %q, want a rejected ExecutionReport (103=1)", m)
	}
	rc.send("FIX.4.4", "D", "11=bad-symbol", "55=1", "54=1", "38=1000", "40=1", "60=20260101-00:00:00")
	if m := rc.read(); !strings.Contains(m, "39=8\x01") || !strings.Contains(m, "duplicate ClOrdID") {
		t.Fatalf("a ClOrdID used twice without PossResend answered %q, want a duplicate reject", m)
	}
	rc.send("FIX.4.4", "ZZ", "1=x")
	if m := rc.read(); !strings.Contains(m, "35=j\x01") && !strings.Contains(m, "35=3\x01") {
		t.Fatalf("an unknown message type answered %q, want a reject", m)
	}

	// The front still serves a proper client.
	s := connect(t, e, "after-bad-input")
	if _, err := s.Account(context.Background()); err != nil {
		t.Fatalf("after bad input: %v", err)
	}
}

// Two Brokers in one process (two nodes of a demo, each reading one master) connect the
// same account at once: quickfixgo registers sessions process-wide, and they must not
// collide.
func TestTwoBrokersOneAccount(t *testing.T) {
	e := newEnv(t, envOptions{})
	other, err := fix.New(fix.Config{Addr: e.front.Addr()})
	if err != nil {
		t.Fatal(err)
	}
	a := connect(t, e, "shared")
	b, err := other.Connect(t.Context(), broker.Credentials{Login: "shared", Password: "pw"})
	if err != nil {
		t.Fatalf("second broker, same account: %v", err)
	}
	t.Cleanup(func() { _ = b.Close() })
	for _, s := range []broker.Session{a, b} {
		if _, err := s.Positions(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
}

// An account's own FIX session settings reach the venue: the Logon's user name and the
// header ids come from Credentials.FIX, over the login, the server field (then only a
// label) and the broker's configuration; an account without them still takes its ids from
// the legacy server-field syntax. Bad settings are refused before anything is sent.
func TestAccountSessionSettings(t *testing.T) {
	e := newEnv(t, envOptions{})
	for _, login := range []string{"acct7", "acct8"} {
		if err := e.sim.Provision(t.Context(), broker.AccountSpec{Login: login, Password: "right", Balance: 1000}); err != nil {
			t.Fatal(err)
		}
	}
	lastLogon := func() fixfront.LogonRecord {
		t.Helper()
		l := e.front.Logons()
		if len(l) == 0 {
			t.Fatal("no logon reached the venue")
		}
		return l[len(l)-1]
	}
	creds := broker.Credentials{Login: "login-the-venue-does-not-know", Server: "a label, not ids", Password: "right",
		FIX: broker.FIXSession{SenderCompID: "demo.sim.acct7", SenderSubID: "desk1", TargetCompID: "cServer", TargetSubID: "QUOTE", Username: "acct7"}}
	s, err := e.broker.Connect(t.Context(), creds)
	if err != nil {
		t.Fatalf("logon with the account's user name: %v", err)
	}
	info, err := s.Account(t.Context())
	if err != nil || info.Login != "acct7" {
		t.Fatalf("logged on as %+v (%v), want acct7", info, err)
	}
	_ = s.Close()
	want := fixfront.LogonRecord{Login: "acct7", MsgSeqNum: 1, ResetSeqNo: true,
		SenderCompID: "demo.sim.acct7", SenderSubID: "desk1", TargetCompID: "cServer", TargetSubID: "QUOTE"}
	if got := lastLogon(); got != want {
		t.Fatalf("the venue saw the logon %+v, want %+v", got, want)
	}

	// Only the user name set: the ids are the configuration's (SenderCompID the login),
	// the server field is still only a label.
	s, err = e.broker.Connect(t.Context(), broker.Credentials{Login: "L8", Server: "cTrader Demo", Password: "right", FIX: broker.FIXSession{Username: "acct8"}})
	if err != nil {
		t.Fatalf("logon with only a user name: %v", err)
	}
	_ = s.Close()
	want = fixfront.LogonRecord{Login: "acct8", MsgSeqNum: 1, ResetSeqNo: true, SenderCompID: "L8", TargetCompID: "cServer", TargetSubID: "TRADE"}
	if got := lastLogon(); got != want {
		t.Fatalf("the venue saw the logon %+v, want %+v", got, want)
	}

	// No settings: the legacy server-field syntax still names the ids; the login logs on.
	s, err = e.broker.Connect(t.Context(), broker.Credentials{Login: "acct8", Server: "demo.sim.acct8/deskL@cServer/TRADE", Password: "right"})
	if err != nil {
		t.Fatalf("logon with the legacy server field: %v", err)
	}
	_ = s.Close()
	want = fixfront.LogonRecord{Login: "acct8", MsgSeqNum: 1, ResetSeqNo: true, SenderCompID: "demo.sim.acct8", SenderSubID: "deskL", TargetCompID: "cServer", TargetSubID: "TRADE"}
	if got := lastLogon(); got != want {
		t.Fatalf("the venue saw the legacy logon %+v, want %+v", got, want)
	}

	creds.FIX.TargetCompID = "someoneElse"
	_, err = e.broker.Connect(t.Context(), creds)
	wantClass(t, err, broker.ErrPermanent)
	if !strings.Contains(err.Error(), "TargetCompID") {
		t.Fatalf("the account's TargetCompID was not used: %v", err)
	}
	logons := len(e.front.Logons())
	for _, bad := range []broker.Credentials{
		{Login: "acct7", Password: "right", FIX: broker.FIXSession{SenderCompID: "has space"}},
		{Login: "acct7", Password: "right", FIX: broker.FIXSession{TargetSubID: "TRADE\x0149=evil"}},
		{Login: "acct7", Password: "right", FIX: broker.FIXSession{Username: "a=b"}},
		{Login: "acct7", Password: "ri\x01ght"},
		{Login: "acct7", Password: "right", Server: "legacy with space"},
	} {
		_, err = e.broker.Connect(t.Context(), bad)
		wantClass(t, err, broker.ErrPermanent)
		if te := (*broker.TradeError)(nil); !errors.As(err, &te) || te.Code != broker.CodeInvalidRequest {
			t.Fatalf("%+v: %v, want an invalid request", bad.FIX, err)
		}
	}
	if n := len(e.front.Logons()); n != logons {
		t.Fatalf("refused settings reached the venue: %d logons, want %d", n, logons)
	}
}
