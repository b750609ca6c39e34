package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/snapcopier/copier/actors"
	"github.com/snapcopier/copier/broker/bridge"
	"github.com/snapcopier/copier/broker/sim"
	"github.com/snapcopier/copier/broker/sim/fixfront"
	"github.com/snapcopier/copier/internal/testwait"
	"github.com/snapcopier/copier/store/storetest"
)

// probeGet GETs url on a fresh connection; the client's limit only ends a hung test.
func probeGet(t *testing.T, url string) (int, string) {
	t.Helper()
	c := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	res, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// TestProbesPassSlowHeaderConnections: five times the connection cap in slow-header
// (slowloris) connections, which the server would wait an hour for, do not keep
// /healthz, /readyz and /metrics out: a newcomer displaces the oldest connection that has
// sent no request. Without that, the probes waited in the accept queue (10–17 s with the
// real 10 s header timeout; here, with an hour, the test's client gives up).
func TestProbesPassSlowHeaderConnections(t *testing.T) {
	const maxConns = 8
	web := &statusHTTP{title: "t", nodes: func() []*actors.Node { return nil }}
	l, ll := serveForTest(t, web.handler(), maxConns, 0) // displacement alone, no anonymous header timeout

	var slow []net.Conn
	defer func() {
		for _, c := range slow {
			_ = c.Close()
		}
	}()
	for range 5 * maxConns {
		c, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		slow = append(slow, c)
		if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n"); err != nil { // never ends its headers
			t.Fatal(err)
		}
	}
	base := "http://" + l.Addr().String()
	for range 3 {
		for path, want := range map[string]int{"/healthz": 200, "/readyz": 503, "/metrics": 200} {
			if code, body := probeGet(t, base+path); code != want {
				t.Fatalf("%s: %d %q, want %d", path, code, body, want)
			}
		}
	}
	if n := len(ll.slots); n > maxConns {
		t.Fatalf("%d connections held, cap %d", n, maxConns)
	}
}

// TestReadyzReportsADeadFIXFront: the demo's readiness includes its FIX front (the nodes'
// broker); a front that no longer accepts makes /readyz 503 with the reason.
func TestReadyzReportsADeadFIXFront(t *testing.T) {
	s := sim.New(sim.Config{Seed: 1, AutoProvision: true})
	front, err := fixfront.Start("127.0.0.1:0", s, s, fixfront.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer front.Close()
	web := &statusHTTP{title: "t", nodes: func() []*actors.Node { return nil }}
	web.addCheck("FIX front", front.Health)
	if ok, why := web.ready(); strings.Contains(why, "FIX front") {
		t.Fatalf("a running front reported: %v %q", ok, why)
	}
	_ = front.Close()
	ok, why := web.ready()
	if ok || !strings.HasPrefix(why, "FIX front: ") {
		t.Fatalf("closed front: ready %v, %q", ok, why)
	}
}

// TestReadyzReportsALostBridge: a node's /readyz names its bridge while the bridge is
// down (it said "ready" while no order could be sent).
func TestReadyzReportsALostBridge(t *testing.T) {
	s := sim.New(sim.Config{Seed: 1, AutoProvision: true})
	srv := bridge.NewServer(s, s, bridge.ServerOptions{Token: "t"})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	c, err := bridge.Dial(t.Context(), l.Addr().String(), bridge.ClientOptions{Token: "t"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	web := &statusHTTP{title: "t", nodes: func() []*actors.Node { return nil }}
	web.addCheck("bridge", c.Connected)
	if _, why := web.ready(); strings.HasPrefix(why, "bridge") {
		t.Fatalf("a connected bridge reported: %q", why)
	}
	_ = srv.Close()
	<-served
	testwait.For(t, "/readyz names the bridge", 30*time.Second, func() (bool, string) {
		ok, why := web.ready()
		return !ok && strings.HasPrefix(why, "bridge: "), why
	})
}

// serveForTest serves h as serveHTTP does, with maxConns and anonymous header timeout
// anonHeader, but the server's own timeouts an hour: what cuts a connection is the
// listener under test. It stops when the test ends.
func serveForTest(t *testing.T, h http.Handler, maxConns int, anonHeader time.Duration) (net.Listener, *limitListener) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ll := newLimitListener(l, maxConns, anonHeader)
	srv := newHTTPServer(h, ll, zerolog.Nop())
	srv.ReadHeaderTimeout, srv.ReadTimeout, srv.WriteTimeout, srv.IdleTimeout = time.Hour, time.Hour, time.Hour, time.Hour
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); runHTTP(ctx, srv, ll, zerolog.Nop()) }()
	t.Cleanup(func() { cancel(); <-done })
	return l, ll
}

// dialForTest connects to addr; its deadline only ends a hung test.
func dialForTest(t *testing.T, addr string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_ = c.SetDeadline(time.Now().Add(time.Minute))
	return c, bufio.NewReader(c)
}

// rawRequest writes a GET of path with extra header lines on c and reads the answer.
func rawRequest(t *testing.T, c net.Conn, r *bufio.Reader, path, extra string) *http.Response {
	t.Helper()
	if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: 127.0.0.1\r\n"+extra+"\r\n"); err != nil {
		t.Fatal(err)
	}
	return readAnswer(t, r)
}

// readAnswer reads one whole answer from r.
func readAnswer(t *testing.T, r *bufio.Reader) *http.Response {
	t.Helper()
	res, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	_ = res.Body.Close()
	return res
}

// TestAnonymousConnectionsAreCutShort: a connection no request authenticated on gets the
// short header timeout of its own (the server's is an hour here) and serves one request,
// so slow-header clients hold their slots for a bounded time (they held them for the
// whole 10 s header timeout); a connection an operator's request authenticated on (the
// real console, a bearer token) keeps the server's limits and its keep-alive, so a slow
// second request on it is still answered after anonymous ones that started later were cut.
func TestAnonymousConnectionsAreCutShort(t *testing.T) {
	const opToken = "operator-token-0123456789"
	db := storetest.NewDB(t)
	web := &statusHTTP{title: "t", nodes: func() []*actors.Node { return nil }}
	if err := mountConsole(web, consoleEnv{token: opToken}.options(db.Pool, nil, nil, zerolog.Nop())); err != nil {
		t.Fatal(err)
	}
	l, ll := serveForTest(t, web.handler(), 64, 200*time.Millisecond)
	dial := func() (net.Conn, *bufio.Reader) { return dialForTest(t, l.Addr().String()) }

	// The operator's connection: authenticated by its first request, then a second
	// request whose headers stay unfinished until the anonymous ones have been cut.
	op, opr := dial()
	if res := rawRequest(t, op, opr, "/api/node", "Authorization: Bearer "+opToken+"\r\n"); res.StatusCode == http.StatusUnauthorized || res.Close {
		t.Fatalf("authenticated request: %d, close %v", res.StatusCode, res.Close)
	}
	if _, err := io.WriteString(op, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n"); err != nil {
		t.Fatal(err)
	}

	// A probe is answered and told the connection closes; the server closes it.
	probe, pr := dial()
	if res := rawRequest(t, probe, pr, "/healthz", ""); res.StatusCode != 200 || !res.Close {
		t.Fatalf("probe: %d, close %v; want 200 and close", res.StatusCode, res.Close)
	}
	if !closedByServer(pr) {
		t.Fatal("the probe's connection was kept")
	}
	// A failed bearer token does not authenticate the connection: closed after the answer.
	guess, gr := dial()
	if res := rawRequest(t, guess, gr, "/api/node", "Authorization: Bearer wrong\r\n"); res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("wrong token: %d", res.StatusCode)
	}
	if !closedByServer(gr) {
		t.Fatal("a connection with a failed token was kept")
	}
	// Slow-header connections are cut although the server would wait an hour.
	var slow []*bufio.Reader
	for range 20 {
		c, r := dial()
		if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n"); err != nil {
			t.Fatal(err)
		}
		slow = append(slow, r)
	}
	for i, r := range slow {
		if !closedByServer(r) {
			t.Fatalf("slow-header anonymous connection %d was held", i)
		}
	}
	testwait.For(t, "only the operator's connection held", 30*time.Second, func() (bool, string) {
		n := len(ll.slots)
		return n == 1, fmt.Sprintf("%d slots taken", n)
	})

	if _, err := io.WriteString(op, "\r\n"); err != nil {
		t.Fatalf("the operator's connection was cut: %v", err)
	}
	if res := readAnswer(t, opr); res.StatusCode != 200 {
		t.Fatalf("operator's second request: %d", res.StatusCode)
	}
}

// closedByServer reports whether the server closed the connection r reads (end of stream, not the test's
// deadline).
func closedByServer(r *bufio.Reader) bool {
	_, err := r.ReadByte()
	var ne net.Error
	return err != nil && !(errors.As(err, &ne) && ne.Timeout())
}

// TestProbesPassSlowBodyConnections: anonymous requests whose bodies never end (the
// console's login form), taking every slot but one, and an operator's request with an
// unfinished body in the last do not keep /healthz, /readyz and /metrics out: a newcomer
// displaces the oldest anonymous request in progress (it waited for a slot until the
// server's 30 s read timeout). The operator's request is never displaced: it is answered
// once its body ends.
func TestProbesPassSlowBodyConnections(t *testing.T) {
	const maxConns = 6
	const opToken = "operator-token-0123456789"
	db := storetest.NewDB(t)
	web := &statusHTTP{title: "t", nodes: func() []*actors.Node { return nil }}
	if err := mountConsole(web, consoleEnv{token: opToken}.options(db.Pool, nil, nil, zerolog.Nop())); err != nil {
		t.Fatal(err)
	}
	l, ll := serveForTest(t, web.handler(), maxConns, time.Hour)
	post := func(path, headers, body string) (net.Conn, *bufio.Reader) {
		c, r := dialForTest(t, l.Addr().String())
		if _, err := io.WriteString(c, "POST "+path+" HTTP/1.1\r\nHost: 127.0.0.1\r\n"+headers+"\r\n"+body); err != nil {
			t.Fatal(err)
		}
		return c, r
	}
	// The operator's request starts first, so it is the oldest busy connection: a
	// displacement that does not spare operators takes it (the first probe displaces one).
	op, opr := post("/api/accounts", "Authorization: Bearer "+opToken+"\r\nContent-Type: application/json\r\nContent-Length: 2\r\n", "{")
	testwait.For(t, "the operator's request in progress", 30*time.Second, func() (bool, string) {
		ll.mu.Lock()
		defer ll.mu.Unlock()
		for c := range ll.busy {
			if c.mark.Authenticated() {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d busy, none authenticated", len(ll.busy))
	})
	for range maxConns - 1 {
		post("/login", "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n", "token=")
	}
	testwait.For(t, "every slot busy with a request, one of them the operator's", 30*time.Second, func() (bool, string) {
		ll.mu.Lock()
		defer ll.mu.Unlock()
		authed := 0
		for c := range ll.busy {
			if c.mark.Authenticated() {
				authed++
			}
		}
		return len(ll.busy) == maxConns && authed == 1, fmt.Sprintf("%d busy, %d authenticated", len(ll.busy), authed)
	})
	base := "http://" + l.Addr().String()
	for range 3 {
		for path, want := range map[string]int{"/healthz": 200, "/readyz": 503, "/metrics": 200} {
			if code, body := probeGet(t, base+path); code != want {
				t.Fatalf("%s: %d %q, want %d", path, code, body, want)
			}
		}
	}
	if _, err := io.WriteString(op, "}"); err != nil {
		t.Fatalf("the operator's connection was displaced: %v", err)
	}
	if res := readAnswer(t, opr); res.StatusCode == http.StatusUnauthorized {
		t.Fatalf("operator's request: %d", res.StatusCode)
	}
}
