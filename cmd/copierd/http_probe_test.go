package main

import (
	"context"
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
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	web := &statusHTTP{title: "t", nodes: func() []*actors.Node { return nil }}
	ll := newLimitListener(l, maxConns)
	srv := newHTTPServer(web.handler(), ll, zerolog.Nop())
	srv.ReadHeaderTimeout, srv.ReadTimeout = time.Hour, time.Hour
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); runHTTP(ctx, srv, ll, zerolog.Nop()) }()
	defer func() { cancel(); <-done }()

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
