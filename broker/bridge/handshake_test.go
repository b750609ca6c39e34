package bridge_test

import (
	"bufio"
	"bytes"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/snapcopier/copier/broker/bridge"
)

// rawDialFrom is rawDial from a given loopback address.
func rawDialFrom(t *testing.T, local, addr string) *rawConn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
	nc, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nc.Close() })
	_ = nc.SetDeadline(time.Now().Add(30 * time.Second)) // a hung-system limit
	return &rawConn{t: t, nc: nc, r: bufio.NewReader(nc)}
}

// hello sends a hello with token and returns the answer's type ("" when closed unanswered).
func (rc *rawConn) hello(token string) string {
	rc.t.Helper()
	rc.send(`{"type":"hello","version":1,"token":"` + token + `","name":"raw"}`)
	if rc.closed() {
		return ""
	}
	_ = rc.r.UnreadByte()
	m := rc.recv()
	typ, _ := m["type"].(string)
	return typ
}

// TestPendingHandshakesPerSource: idle sockets from one source hold at most
// MaxPendingPerSource handshake slots, so clients from elsewhere still get in (64 idle
// sockets from one host once locked out 54 of 56 real clients).
func TestPendingHandshakesPerSource(t *testing.T) {
	s := newSim()
	ts := startServer(t, "127.0.0.1:0", s, s, bridge.ServerOptions{MaxPendingHandshakes: 6, MaxPendingPerSource: 2,
		HandshakeTimeout: time.Hour, PressureHandshakeTimeout: time.Hour})
	idle := []*rawConn{rawDialFrom(t, "127.0.0.1", ts.addr), rawDialFrom(t, "127.0.0.1", ts.addr)}
	for _, rc := range idle {
		if _, err := rc.nc.Write([]byte{0, 0, 0, 100, '{'}); err != nil { // half a hello
			t.Fatal(err)
		}
	}
	// Accepts are in order: once a third from the source is closed, the two hold slots.
	for range 10 {
		if !rawDialFrom(t, "127.0.0.1", ts.addr).closed() {
			t.Fatal("a third pending handshake from one source was kept")
		}
	}
	for i := range 4 {
		if typ := rawDialFrom(t, net.IPv4(127, 0, 0, byte(2+i)).String(), ts.addr).hello(testToken); typ != "welcome" {
			t.Fatalf("client %d from another source: %q", i, typ)
		}
	}
}

// TestHandshakeDeadlineShortensUnderPressure: once half the handshake slots are taken, a
// newcomer that sends nothing is closed after PressureHandshakeTimeout, not the hour of
// HandshakeTimeout.
func TestHandshakeDeadlineShortensUnderPressure(t *testing.T) {
	s := newSim()
	ts := startServer(t, "127.0.0.1:0", s, s, bridge.ServerOptions{MaxPendingHandshakes: 4,
		HandshakeTimeout: time.Hour, PressureHandshakeTimeout: 100 * time.Millisecond})
	a, b := rawDialFrom(t, "127.0.0.2", ts.addr), rawDialFrom(t, "127.0.0.3", ts.addr)
	for _, rc := range []*rawConn{a, b} {
		if _, err := rc.nc.Write([]byte{0, 0, 0, 100, '{'}); err != nil {
			t.Fatal(err)
		}
	}
	// The two above are accepted first (in order); the third finds half the slots taken.
	if !rawDialFrom(t, "127.0.0.4", ts.addr).closed() {
		t.Fatal("a silent connection under pressure was kept")
	}
	// A client that says hello at once is served under pressure too.
	if typ := rawDialFrom(t, "127.0.0.5", ts.addr).hello(testToken); typ != "welcome" {
		t.Fatalf("client under pressure: %q", typ)
	}
}

// TestTokenGuessesBackOff: after a few bad tokens from one source each refusal waits twice
// as long as the last (they were refused at full speed, 30,224 in 10 s); the right token
// from the same source is never delayed; refusals are logged at most once a second.
func TestTokenGuessesBackOff(t *testing.T) {
	s := newSim()
	var logs lockedBuffer
	ts := startServer(t, "127.0.0.1:0", s, s, bridge.ServerOptions{Logger: zerolog.New(&logs)})
	const guesses = 7 // 3 free, then 100 + 200 + 400 + 800 ms
	start := time.Now()
	for i := range guesses {
		if typ := rawDialFrom(t, "127.0.0.9", ts.addr).hello("guess"); typ != "refused" {
			t.Fatalf("guess %d: %q", i, typ)
		}
	}
	if took := time.Since(start); took < 1500*time.Millisecond {
		t.Fatalf("%d bad tokens refused in %v, want at least the 1.5 s of back-off", guesses, took)
	}
	// The right token from the guessing source is answered at once (a client sharing the
	// address); the limit below only ends a hung test.
	rc := rawDialFrom(t, "127.0.0.9", ts.addr)
	_ = rc.nc.SetDeadline(time.Now().Add(30 * time.Second))
	if typ := rc.hello(testToken); typ != "welcome" {
		t.Fatalf("right token from the guessing source: %q", typ)
	}
	lines := strings.Count(logs.String(), "handshake failed")
	if most := int(time.Since(start)/time.Second) + 2; lines > most {
		t.Fatalf("%d refusal lines in %v, want at most %d", lines, time.Since(start), most)
	}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
