package bridge_test

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"io"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/broker/bridge"
)

// rawConn speaks the protocol by hand, as a bridge in another language would, to pin the
// wire format PROTOCOL.md documents.
type rawConn struct {
	t  *testing.T
	nc net.Conn
	r  *bufio.Reader
}

func rawDial(t *testing.T, addr string) *rawConn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nc.Close() })
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	return &rawConn{t: t, nc: nc, r: bufio.NewReader(nc)}
}

func (rc *rawConn) send(frame string) {
	rc.t.Helper()
	b := make([]byte, 4+len(frame))
	binary.BigEndian.PutUint32(b, uint32(len(frame)))
	copy(b[4:], frame)
	if _, err := rc.nc.Write(b); err != nil {
		rc.t.Fatal(err)
	}
}

func (rc *rawConn) recv() map[string]any {
	rc.t.Helper()
	var hdr [4]byte
	if _, err := io.ReadFull(rc.r, hdr[:]); err != nil {
		rc.t.Fatalf("read frame: %v", err)
	}
	b := make([]byte, binary.BigEndian.Uint32(hdr[:]))
	if _, err := io.ReadFull(rc.r, b); err != nil {
		rc.t.Fatalf("read frame: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		rc.t.Fatalf("frame %q: %v", b, err)
	}
	return m
}

// recvType reads frames until one of type typ.
func (rc *rawConn) recvType(typ string) map[string]any {
	rc.t.Helper()
	for {
		if m := rc.recv(); m["type"] == typ {
			return m
		}
	}
}

// closed reports whether the server closed the connection.
func (rc *rawConn) closed() bool {
	_, err := rc.r.ReadByte()
	return err == io.EOF
}

func TestWireFormat(t *testing.T) {
	s := newSim()
	ts := startServer(t, "127.0.0.1:0", s, s, bridge.ServerOptions{MaxInflight: 7, IdleTimeout: 9 * time.Second})

	t.Run("refused", func(t *testing.T) {
		rc := rawDial(t, ts.addr)
		rc.send(`{"type":"hello","version":1,"token":"nope","name":"raw"}`)
		m := rc.recv()
		e, _ := m["error"].(map[string]any)
		if m["type"] != "refused" || e["class"] != "permanent" || e["code"] != float64(broker.CodeAuthFailed) {
			t.Fatalf("got %v", m)
		}
		if !rc.closed() {
			t.Fatal("connection still open after refusal")
		}
		rc = rawDial(t, ts.addr)
		rc.send(`{"type":"hello","version":99,"token":"` + testToken + `"}`)
		if m := rc.recv(); m["type"] != "refused" {
			t.Fatalf("version 99: got %v", m)
		}
	})

	t.Run("session", func(t *testing.T) {
		rc := rawDial(t, ts.addr)
		rc.send(`{"type":"hello","version":1,"token":"` + testToken + `","name":"raw"}`)
		if m := rc.recv(); m["type"] != "welcome" || m["version"] != 1.0 || m["max_inflight"] != 7.0 || m["idle_timeout_ms"] != 9000.0 {
			t.Fatalf("welcome: %v", m)
		}
		rc.send(`{"type":"request","id":1,"method":"broker.connect","session":5,"timeout_ms":5000,` +
			`"params":{"login":"raw-1","server":"sim","password":""}}`)
		if m := rc.recv(); m["type"] != "response" || m["id"] != 1.0 || m["error"] != nil {
			t.Fatalf("connect: %v", m)
		}
		rc.send(`{"type":"request","id":2,"method":"session.subscribe","session":5,"params":{"sub":9}}`)
		if m := rc.recvType("response"); m["id"] != 2.0 || m["error"] != nil {
			t.Fatalf("subscribe: %v", m)
		}
		rc.send(`{"type":"request","id":3,"method":"session.open","session":5,"timeout_ms":5000,"params":{` +
			`"request_id":"6f1c2a9e-8a34-4d1e-9a59-0b1f7c3e2d10","token":3,"node":"raw","symbol":"EURUSD",` +
			`"side":-1,"type":0,"volume":0.02,"price":0,"sl":0,"tp":0,"magic":42,"comment":"hi"}}`)
		var res, ev map[string]any
		for res == nil || ev == nil { // the event and the response may come in either order
			switch m := rc.recv(); m["type"] {
			case "response":
				res = m
			case "event":
				ev = m
			}
		}
		r, _ := res["result"].(map[string]any)
		if res["id"] != 3.0 || r["ticket"] == nil || r["volume"] != 0.02 || r["server_time"] == nil {
			t.Fatalf("open: %v", res)
		}
		e, _ := ev["event"].(map[string]any)
		p, _ := e["position"].(map[string]any)
		if ev["sub"] != 9.0 || e["kind"] != 1.0 || e["seq"] != 1.0 || e["login"] != "raw-1" ||
			p["ticket"] != r["ticket"] || p["side"] != -1.0 || p["magic"] != 42.0 || p["comment"] != "hi" {
			t.Fatalf("event: %v", ev)
		}

		rc.send(`{"type":"request","id":4,"method":"session.close_position","session":5,"params":{` +
			`"request_id":"6f1c2a9e-8a34-4d1e-9a59-0b1f7c3e2d11","token":3,"node":"raw","ticket":1,"volume":0}}`)
		m := rc.recvType("response")
		e, _ = m["error"].(map[string]any)
		if m["id"] != 4.0 || e["class"] != "permanent" || e["code"] != float64(broker.CodeInvalidRequest) || e["message"] == "" {
			t.Fatalf("close of an unknown ticket: %v", m)
		}

		rc.send(`{"type":"request","id":5,"method":"session.account","session":77}`)
		e, _ = rc.recvType("response")["error"].(map[string]any)
		if e["class"] != "disconnected" {
			t.Fatalf("unknown session: %v", e)
		}
		rc.send(`{"type":"request","id":6,"method":"no.such_method","session":5}`)
		e, _ = rc.recvType("response")["error"].(map[string]any)
		if e["class"] != "permanent" || e["code"] != float64(broker.CodeInvalidRequest) {
			t.Fatalf("unknown method: %v", e)
		}

		rc.send(`{"type":"ping","id":11}`)
		if m := rc.recvType("pong"); m["id"] != 11.0 {
			t.Fatalf("pong: %v", m)
		}
		rc.send(`{"type":"some_future_frame"}`) // ignored
		rc.send(`{"type":"unsubscribe","sub":9}`)
		rc.send(`{"type":"request","id":7,"method":"session.close","session":5}`)
		if m := rc.recvType("response"); m["id"] != 7.0 || m["error"] != nil {
			t.Fatalf("session.close: %v", m)
		}
	})

	t.Run("oversized frame", func(t *testing.T) {
		rc := rawDial(t, ts.addr)
		rc.send(`{"type":"hello","version":1,"token":"` + testToken + `"}`)
		rc.recvType("welcome")
		var hdr [4]byte
		binary.BigEndian.PutUint32(hdr[:], bridge.MaxFrameSize+1)
		if _, err := rc.nc.Write(hdr[:]); err != nil {
			t.Fatal(err)
		}
		if !rc.closed() {
			t.Fatal("connection still open after an oversized frame")
		}
	})

	t.Run("idle", func(t *testing.T) {
		ts := startServer(t, "127.0.0.1:0", s, s, bridge.ServerOptions{IdleTimeout: 50 * time.Millisecond})
		rc := rawDial(t, ts.addr)
		rc.send(`{"type":"hello","version":1,"token":"` + testToken + `"}`)
		rc.recvType("welcome")
		if !rc.closed() { // nothing sent, not even a ping
			t.Fatal("idle connection not closed")
		}
	})

	t.Run("too many in flight", func(t *testing.T) {
		rc := rawDial(t, ts.addr)
		rc.send(`{"type":"hello","version":1,"token":"` + testToken + `"}`)
		rc.recvType("welcome")
		if err := s.Provision(t.Context(), broker.AccountSpec{Login: "raw-slow"}); err != nil {
			t.Fatal(err)
		}
		if err := s.SetFaults(t.Context(), "raw-slow", broker.Faults{Latency: time.Minute}); err != nil {
			t.Fatal(err)
		}
		// Eight connects to a slow account: the server runs seven and refuses the eighth.
		for i := 1; i <= 8; i++ {
			rc.send(`{"type":"request","id":` + itoa(i) + `,"method":"broker.connect","session":` + itoa(i) +
				`,"params":{"login":"raw-slow","server":"","password":""}}`)
		}
		m := rc.recvType("response")
		e, _ := m["error"].(map[string]any)
		if m["id"] != 8.0 || e["class"] != "retryable" || e["code"] != float64(broker.CodeTooManyRequests) {
			t.Fatalf("eighth request: %v", m)
		}
		rc.send(`{"type":"cancel","id":3}`)
		m = rc.recvType("response")
		e, _ = m["error"].(map[string]any)
		if m["id"] != 3.0 || e["class"] != "disconnected" {
			t.Fatalf("cancelled request: %v", m)
		}
	})
}

func itoa(i int) string { return strconv.Itoa(i) }
