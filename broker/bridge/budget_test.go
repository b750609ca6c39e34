package bridge

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snapcopier/copier/broker"
)

// signedIn dials addr and completes the handshake with token.
func signedIn(t *testing.T, addr, token string) net.Conn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nc.Close() })
	hello := []byte(`{"type":"hello","version":1,"token":"` + token + `","name":"budget"}`)
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], uint32(len(hello)))
	if _, err := nc.Write(append(hdr[:], hello...)); err != nil {
		t.Fatal(err)
	}
	_ = nc.SetReadDeadline(time.Now().Add(30 * time.Second))
	r := bufio.NewReader(nc)
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		t.Fatalf("welcome: %v", err)
	}
	if _, err := io.ReadFull(r, make([]byte, binary.BigEndian.Uint32(hdr[:]))); err != nil {
		t.Fatalf("welcome: %v", err)
	}
	_ = nc.SetReadDeadline(time.Time{})
	return nc
}

// TestFrameBudgetBoundsWithheldFrames: signed-in connections that each send all of a large
// frame but its last byte hold at most the server's frame budget together; the frames
// above it are refused and their connections closed, a normal client keeps working, and
// the budget is whole again once they are gone. (Without the budget, 40 connections with
// a 16 MiB − 1 frame each took the simulator from 32 to 899 MB.)
func TestFrameBudgetBoundsWithheldFrames(t *testing.T) {
	const budget, frame, attackers = 4 << 20, 2 << 20, 8
	_, srv, addr := startInternal(t, ServerOptions{FrameBudget: budget, IdleTimeout: time.Hour})
	var closed atomic.Int64
	conns := make([]net.Conn, attackers)
	for i := range conns {
		nc := signedIn(t, addr, "internal")
		conns[i] = nc
		go func() {
			var hdr [4]byte
			binary.BigEndian.PutUint32(hdr[:], frame)
			_, _ = nc.Write(append(hdr[:], '{'))
			_, _ = nc.Write(make([]byte, frame-2)) // all but the last byte; fails once closed
		}()
		go func() {
			_ = nc.SetReadDeadline(time.Now().Add(time.Minute))
			_, err := nc.Read(make([]byte, 1))
			var ne net.Error
			if !errors.As(err, &ne) || !ne.Timeout() {
				closed.Add(1)
			}
		}()
	}
	inUse := func() int {
		srv.frames.mu.Lock()
		defer srv.frames.mu.Unlock()
		return budget - srv.frames.left
	}
	// Each frame beyond its first 64 KiB needs about half the budget: at most two fit.
	poll(t, "the frames above the budget refused", func() bool { return closed.Load() >= attackers-2 })
	if n := inUse(); n > budget {
		t.Fatalf("%d bytes of frames held, budget %d", n, budget)
	}
	// A normal client is served meanwhile.
	c, err := Dial(t.Context(), addr, ClientOptions{Token: "internal"})
	if err != nil {
		t.Fatal(err)
	}
	sess, err := c.Connect(t.Context(), broker.Credentials{Login: "normal"})
	if err != nil {
		t.Fatalf("a normal client was refused while the budget was spent: %v", err)
	}
	if _, err := sess.Account(t.Context()); err != nil {
		t.Fatal(err)
	}
	_ = sess.Close()
	_ = c.Close()
	// Gone attackers give their share back.
	for _, nc := range conns {
		_ = nc.Close()
	}
	poll(t, "the whole budget back", func() bool { return inUse() == 0 })
}
