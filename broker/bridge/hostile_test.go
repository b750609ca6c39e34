package bridge_test

import (
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/broker/bridge"
)

// TestOversizedHelloIsRefused: before the handshake a frame above MaxHelloSize ends the
// connection at its header; nothing of it is read or allocated.
func TestOversizedHelloIsRefused(t *testing.T) {
	s := newSim()
	// The handshake timeout outlasts the wait below: only the size check can end it.
	ts := startServer(t, "127.0.0.1:0", s, s, bridge.ServerOptions{HandshakeTimeout: time.Minute})
	rc := rawDial(t, ts.addr)
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], 15<<20)
	if _, err := rc.nc.Write(hdr[:]); err != nil {
		t.Fatal(err)
	}
	_ = rc.nc.SetDeadline(time.Now().Add(30 * time.Second)) // a hung-system limit
	if !rc.closed() {
		t.Fatal("a 15 MB hello did not end the connection")
	}
	// A normal client still gets in.
	c := dial(t, ts.addr, bridge.ClientOptions{Token: testToken})
	if _, err := c.Connect(t.Context(), broker.Credentials{Login: "ok"}); err != nil {
		t.Fatal(err)
	}
}

// TestHandshakeCap: connections that do not complete their handshake are capped; one
// above the cap is closed at once.
func TestHandshakeCap(t *testing.T) {
	s := newSim()
	ts := startServer(t, "127.0.0.1:0", s, s, bridge.ServerOptions{MaxPendingHandshakes: 2, HandshakeTimeout: time.Minute, PressureHandshakeTimeout: time.Minute})
	a, b := rawDial(t, ts.addr), rawDial(t, ts.addr)
	// The third is closed by the server; the first two are served once they say hello.
	// (Accepts are in order, so a and b are registered before c.)
	// Half a frame each: a and b stay in their handshake.
	for _, rc := range []*rawConn{a, b} {
		if _, err := rc.nc.Write([]byte{0, 0, 0, 100, '{'}); err != nil {
			t.Fatal(err)
		}
	}
	c := rawDial(t, ts.addr)
	_ = c.nc.SetDeadline(time.Now().Add(30 * time.Second))
	if !c.closed() {
		t.Fatal("a connection above the handshake cap was served")
	}
}

// TestConnectionCap: at most MaxConns connections are served at once.
func TestConnectionCap(t *testing.T) {
	s := newSim()
	ts := startServer(t, "127.0.0.1:0", s, s, bridge.ServerOptions{MaxConns: 1, HandshakeTimeout: time.Minute})
	first := rawDial(t, ts.addr)
	first.send(`{"type":"hello","version":1,"token":"` + testToken + `","name":"raw"}`)
	if m := first.recv(); m["type"] != "welcome" {
		t.Fatalf("first: %v", m)
	}
	second := rawDial(t, ts.addr)
	_ = second.nc.SetDeadline(time.Now().Add(30 * time.Second))
	if !second.closed() {
		t.Fatal("a connection above MaxConns was served")
	}
}

// TestIDsAbove2To53AreRefused: PROTOCOL.md says ids are below 2^53; a request with a
// larger id is answered with a permanent invalid-request error and not executed.
func TestIDsAbove2To53AreRefused(t *testing.T) {
	s := newSim()
	ts := startServer(t, "127.0.0.1:0", s, s, bridge.ServerOptions{})
	rc := rawDial(t, ts.addr)
	rc.send(`{"type":"hello","version":1,"token":"` + testToken + `","name":"raw"}`)
	if m := rc.recv(); m["type"] != "welcome" {
		t.Fatalf("welcome: %v", m)
	}
	for _, req := range []string{
		`{"type":"request","id":9007199254740993,"method":"broker.connect","session":5,"params":{"login":"x","server":"sim","password":""}}`,
		`{"type":"request","id":7,"method":"broker.connect","session":9007199254740993,"params":{"login":"x","server":"sim","password":""}}`,
	} {
		rc.send(req)
		m := rc.recvType("response")
		e, _ := m["error"].(map[string]any)
		if e == nil || e["code"] != float64(broker.CodeInvalidRequest) || !strings.Contains(e["message"].(string), "2^53") {
			t.Fatalf("%s: got %v", req, m)
		}
	}
	// Not executed: session 5 is still free.
	rc.send(`{"type":"request","id":8,"method":"broker.connect","session":5,"params":{"login":"x","server":"sim","password":""}}`)
	if m := rc.recvType("response"); m["error"] != nil {
		t.Fatalf("session 5 after the refused request: %v", m)
	}
}
