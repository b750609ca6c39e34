package fixfront_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/snapcopier/copier/broker/sim"
	"github.com/snapcopier/copier/broker/sim/fixfront"
)

func startFront(t *testing.T, o fixfront.Options) *fixfront.Front {
	t.Helper()
	s := sim.New(sim.Config{Seed: 1, AutoProvision: true})
	f, err := fixfront.Start("127.0.0.1:0", s, s, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	return f
}

func dial(t *testing.T, local, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// closedByFront reports whether the front closed c before the test's own generous
// deadline (a hung front, not a timing assumption).
func closedByFront(c net.Conn) bool {
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	_, err := c.Read(make([]byte, 1))
	var ne net.Error
	return err != nil && !(errors.As(err, &ne) && ne.Timeout())
}

// A connection that sends no Logon is closed after LogonTimeout (it was held for good).
func TestFrontClosesConnectionsWithoutLogon(t *testing.T) {
	f := startFront(t, fixfront.Options{LogonTimeout: 100 * time.Millisecond})
	if !closedByFront(dial(t, "127.0.0.1", f.Addr())) {
		t.Fatal("an idle connection was held")
	}
}

// Connections over MaxConnsPerSource or MaxConns are closed as they arrive.
func TestFrontBoundsConnections(t *testing.T) {
	f := startFront(t, fixfront.Options{LogonTimeout: time.Hour, MaxConns: 4, MaxConnsPerSource: 2})
	for range 2 {
		dial(t, "127.0.0.1", f.Addr())
	}
	// The third from one source is closed; the acceptor admits in order, so once it is
	// closed the first two are held.
	for range 10 {
		if !closedByFront(dial(t, "127.0.0.1", f.Addr())) {
			t.Fatal("a connection over MaxConnsPerSource was held")
		}
	}
	dial(t, "127.0.0.2", f.Addr())
	dial(t, "127.0.0.3", f.Addr())
	for i := range 10 {
		if !closedByFront(dial(t, net.IPv4(127, 0, 0, byte(10+i)).String(), f.Addr())) {
			t.Fatal("a connection over MaxConns was held")
		}
	}
}

// A frame larger than MaxMessageSize closes the connection instead of growing a buffer
// (v0.9.7 read `8=FIX.4.4␁` and 400 MiB without 9= into memory).
func TestFrontBoundsAMessage(t *testing.T) {
	f := startFront(t, fixfront.Options{})
	for name, head := range map[string]string{
		"no BodyLength":   "8=FIX.4.4\x01",
		"huge BodyLength": "8=FIX.4.4\x019=999999999\x0135=A\x01",
	} {
		t.Run(name, func(t *testing.T) {
			c := dial(t, "127.0.0.1", f.Addr())
			closed := make(chan bool, 1)
			go func() { closed <- closedByFront(c) }()
			// 64 MiB, 1,024 times the default bound: the writes fail once the front
			// has closed the connection.
			chunk := bytes.Repeat([]byte("A"), 64<<10)
			written := 0
			_ = c.SetWriteDeadline(time.Now().Add(30 * time.Second))
			if _, err := c.Write([]byte(head)); err != nil {
				t.Fatal(err)
			}
			for written < 64<<20 {
				n, err := c.Write(chunk)
				written += n
				if err != nil {
					break
				}
			}
			if !<-closed {
				t.Fatalf("the front kept reading a frame past its bound (%d bytes written)", written)
			}
			if written >= 64<<20 {
				t.Fatalf("the front read all %d bytes of one frame", written)
			}
		})
	}
}

func TestFrontRefusesNegativeBounds(t *testing.T) {
	s := sim.New(sim.Config{Seed: 1})
	if _, err := fixfront.Start("127.0.0.1:0", s, s, fixfront.Options{MaxConns: -1}); err == nil {
		t.Fatal("a negative bound was accepted")
	}
}

// rawLogon sends a Logon for user and pass from a fresh connection (with the right
// CheckSum unless badSum) and returns the reply: the Logon's echo, a Logout with the
// reason, or "" when the front closed the connection. It may run on goroutines other
// than the test's, so it reports a failed dial with t.Error, not t.Fatal.
func rawLogon(t *testing.T, addr, user, pass string, badSum bool) string {
	t.Helper()
	return rawLogonWith(t, addr, "553="+user+"\x01554="+pass+"\x01", badSum)
}

// rawLogonWith is rawLogon with the Logon's body fields after HeartBtInt and
// ResetSeqNumFlag given as they go on the wire.
func rawLogonWith(t *testing.T, addr, fields string, badSum bool) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Error(err)
		return ""
	}
	defer c.Close()
	body := "35=A\x0149=raw\x0156=cServer\x0134=1\x0152=" + time.Now().UTC().Format("20060102-15:04:05.000") +
		"\x0198=0\x01108=30\x01141=Y\x01" + fields
	msg := fmt.Sprintf("8=FIX.4.4\x019=%d\x01%s", len(body), body)
	sum := 0
	for i := range len(msg) {
		sum += int(msg[i])
	}
	if badSum {
		sum++
	}
	msg += fmt.Sprintf("10=%03d\x01", sum%256)
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := c.Write([]byte(msg)); err != nil {
		// The front may refuse a huge field and close before the whole message is
		// written: a reset mid-write is a refusal, not a test failure.
		return ""
	}
	r := bufio.NewReader(c)
	var b strings.Builder
	for {
		s, err := r.ReadString('\x01')
		b.WriteString(s)
		if err != nil || strings.HasPrefix(s, "10=") {
			return b.String()
		}
	}
}

// TestFrontChecksLogons: a wrong password after the first accepted logon of a login, a bad
// CheckSum, a NUL or a huge user name are refused (they were all accepted), and the
// refusals are logged at most once a second.
func TestFrontChecksLogons(t *testing.T) {
	var logBuf syncBuffer
	f := startFront(t, fixfront.Options{Log: zerolog.New(&logBuf)})
	accepted := func(reply string) bool { return strings.Contains(reply, "\x0135=A\x01") }
	if r := rawLogon(t, f.Addr(), "alice", "right", false); !accepted(r) {
		t.Fatalf("first logon refused: %q", r)
	}
	if r := rawLogon(t, f.Addr(), "alice", "right", false); !accepted(r) {
		t.Fatalf("logon with the same password refused: %q", r)
	}
	for name, c := range map[string]struct {
		user, pass string
		badSum     bool
	}{
		"wrong password": {"alice", "wrong", false},
		"bad CheckSum":   {"bob", "pw", true},
		"NUL in name":    {"b\x00ob", "pw", false},
		"huge name":      {strings.Repeat("n", 1<<20), "pw", false},
		"long name":      {strings.Repeat("n", 1000), "pw", false},
	} {
		if r := rawLogon(t, f.Addr(), c.user, c.pass, c.badSum); accepted(r) {
			t.Errorf("%s: logon accepted", name)
		}
	}
	for _, l := range f.Logons() {
		if l.Login != "alice" {
			t.Fatalf("refused logon recorded: %q", l.Login[:min(len(l.Login), 20)])
		}
	}

	// A flood of wrong passwords: one log line a second at most.
	lines := func() int { return strings.Count(logBuf.String(), "fix logon refused") }
	before, start := lines(), time.Now()
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() { rawLogon(t, f.Addr(), "alice", "guess", false) })
	}
	wg.Wait()
	if n, most := lines()-before, int(time.Since(start)/time.Second)+2; n > most {
		t.Fatalf("%d refusal lines in %v, want at most %d", n, time.Since(start), most)
	}
}

// syncBuffer is a bytes.Buffer safe for the front's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestFrontChecksTheToken: with Options.Token (`copierd sim --token`), a Logon is accepted
// only with the token in RawData (96); a missing, wrong, or wrongly sized one is refused
// with the reason (any logon was accepted), logged without the token.
func TestFrontChecksTheToken(t *testing.T) {
	const token = "s3cret-token"
	var logBuf syncBuffer
	f := startFront(t, fixfront.Options{Token: token, Log: zerolog.New(&logBuf)})
	logon := func(raw string) string {
		return rawLogonWith(t, f.Addr(), raw+"553=carol\x01554=pw\x01", false)
	}
	withToken := func(n int, v string) string { return fmt.Sprintf("95=%d\x0196=%s\x01", n, v) }
	if r := logon(withToken(len(token), token)); !strings.Contains(r, "\x0135=A\x01") {
		t.Fatalf("the right token refused: %q", r)
	}
	for name, c := range map[string]struct{ raw, reason string }{
		"missing":      {"", "requires its token in RawData (96)"},
		"wrong":        {withToken(len(token), "s3cret-tokem"), "bad token in RawData (96)"},
		"empty":        {withToken(0, ""), "bad token in RawData (96)"},
		"prefix":       {withToken(len(token)-1, token[:len(token)-1]), "bad token in RawData (96)"},
		"wrong length": {withToken(3, token), "RawDataLength (95)"},
	} {
		r := logon(c.raw)
		if !strings.Contains(r, "\x0135=5\x01") || !strings.Contains(r, c.reason) {
			t.Errorf("%s token: reply %q, want a Logout naming %q", name, r, c.reason)
		}
	}
	if n := len(f.Logons()); n != 1 {
		t.Fatalf("%d logons recorded, want the one with the token", n)
	}
	// The front logs a refusal before it answers: the first one is in the log.
	if !strings.Contains(logBuf.String(), "fix logon refused") {
		t.Fatalf("no refusal logged: %q", logBuf.String())
	}
	if strings.Contains(logBuf.String(), "s3cret") {
		t.Fatalf("the token was logged: %s", logBuf.String())
	}
}
