package quickfix

// Tests of the patched acceptor (PATCHES.md): the accept loop survives Accept errors, and
// connections are bounded in number, per source and in how long they may stay silent.

import (
	"errors"
	"fmt"
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/quickfixgo/quickfix/config"
)

// failingListener fails its first n Accepts with the error a process out of file
// descriptors gets, then accepts from the real listener.
type failingListener struct {
	net.Listener
	fail  atomic.Int64
	calls atomic.Int64
}

func (l *failingListener) Accept() (net.Conn, error) {
	l.calls.Add(1)
	if l.fail.Add(-1) >= 0 {
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	}
	return l.Listener.Accept()
}

// testAcceptor returns an acceptor with the given global settings whose accept loop runs
// on a fresh loopback listener; it is stopped when the test ends.
func testAcceptor(t *testing.T, wrap func(net.Listener) net.Listener, set map[string]string) (*Acceptor, string) {
	t.Helper()
	settings := NewSettings()
	for k, v := range set {
		settings.GlobalSettings().Set(k, v)
	}
	a, err := NewAcceptor(nil, NewMemoryStoreFactory(), settings, NewNullLogFactory())
	if err != nil {
		t.Fatal(err)
	}
	if err := a.readLimits(settings.GlobalSettings()); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a.listenerShutdown.Add(1)
	go a.listenForConnections(wrap(l))
	t.Cleanup(func() {
		a.stopOnce.Do(func() { close(a.stopped) })
		_ = l.Close()
		a.listenerShutdown.Wait()
	})
	return a, l.Addr().String()
}

// closedByServer reports whether the server closed c (a read ends with EOF or a reset)
// before the test's own generous deadline.
func closedByServer(t *testing.T, c net.Conn) bool {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	_, err := c.Read(make([]byte, 1))
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return false
	}
	return err != nil
}

// waitFor polls cond until it holds, failing the test after a generous deadline.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	poll := time.NewTicker(time.Millisecond)
	defer poll.Stop()
	for deadline := time.Now().Add(30 * time.Second); !cond(); <-poll.C {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func dialFrom(t *testing.T, local, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// v0.9.7 returned from the accept loop on the first error: the port stayed open and no
// connection was ever served again.
func TestAcceptorKeepsAcceptingAfterAcceptErrors(t *testing.T) {
	var fl *failingListener
	a, addr := testAcceptor(t, func(l net.Listener) net.Listener {
		fl = &failingListener{Listener: l}
		fl.fail.Store(5)
		return fl
	}, nil)
	c := dialFrom(t, "127.0.0.1", addr)
	// A Logon for a session the acceptor does not know: it reads it and closes.
	if _, err := c.Write(frame("35=A|49=client|56=server|34=1|52=20260101-00:00:00.000|98=0|108=30|")); err != nil {
		t.Fatal(err)
	}
	if !closedByServer(t, c) {
		t.Fatalf("connection not served (Accept called %d times, 5 of them failing)", fl.calls.Load())
	}
	if got := fl.calls.Load(); got < 6 {
		t.Fatalf("Accept called %d times, want the 5 failures and a success", got)
	}
	if err := a.AcceptErr(); err != nil {
		t.Fatalf("AcceptErr after a success: %v", err)
	}
}

func TestAcceptorStopEndsAcceptBackoff(t *testing.T) {
	settings := NewSettings()
	a, err := NewAcceptor(nil, NewMemoryStoreFactory(), settings, NewNullLogFactory())
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	fl := &failingListener{Listener: l}
	fl.fail.Store(1 << 40) // fails for good
	a.listenerShutdown.Add(1)
	go a.listenForConnections(fl)
	waitFor(t, "the loop in back-off", func() bool { return fl.calls.Load() >= 3 })
	if err := a.AcceptErr(); !errors.Is(err, syscall.EMFILE) {
		t.Fatalf("AcceptErr while backing off: %v", err)
	}
	a.stopOnce.Do(func() { close(a.stopped) })
	a.listenerShutdown.Wait() // returns: the loop saw the stop
}

func TestAcceptorClosesSilentConnections(t *testing.T) {
	_, addr := testAcceptor(t, func(l net.Listener) net.Listener { return l },
		map[string]string{config.FirstMessageTimeout: "100ms"})
	c := dialFrom(t, "127.0.0.1", addr)
	if !closedByServer(t, c) {
		t.Fatal("a connection that sent nothing was kept")
	}
	// Half a Logon is as silent as nothing.
	c = dialFrom(t, "127.0.0.1", addr)
	logon := frame("35=A|49=client|56=server|34=1|52=20260101-00:00:00.000|98=0|108=30|")
	if _, err := c.Write(logon[:len(logon)/2]); err != nil {
		t.Fatal(err)
	}
	if !closedByServer(t, c) {
		t.Fatal("a connection that sent half a message was kept")
	}
}

func TestAcceptorBoundsConnections(t *testing.T) {
	const total, perHost = 6, 2
	a, addr := testAcceptor(t, func(l net.Listener) net.Listener { return l }, map[string]string{
		config.MaxConnections: "6", config.MaxConnectionsPerHost: "2", config.FirstMessageTimeout: "1h"})
	open := func() int {
		a.connMu.Lock()
		defer a.connMu.Unlock()
		return a.connCount
	}
	waitOpen := func(n int) {
		t.Helper()
		waitFor(t, fmt.Sprintf("%d connections open", n), func() bool { return open() == n })
	}
	// One source: two are held, every further one is closed at once.
	for range perHost {
		dialFrom(t, "127.0.0.1", addr)
	}
	waitOpen(perHost)
	for range 20 {
		if !closedByServer(t, dialFrom(t, "127.0.0.1", addr)) {
			t.Fatal("a connection over the per-source bound was kept")
		}
		if n := open(); n > perHost {
			t.Fatalf("%d connections open from one source, bound %d", n, perHost)
		}
	}
	// Many sources: the total bound holds.
	var held []net.Conn
	for i := 2; i < 2+total; i++ {
		held = append(held, dialFrom(t, net.IPv4(127, 0, 0, byte(i)).String(), addr))
	}
	waitOpen(total)
	for i := 10; i < 30; i++ {
		if !closedByServer(t, dialFrom(t, net.IPv4(127, 0, 0, byte(i)).String(), addr)) {
			t.Fatal("a connection over the total bound was kept")
		}
		if n := open(); n > total {
			t.Fatalf("%d connections open, bound %d", n, total)
		}
	}
	// A closed connection frees its slot.
	_ = held[0].Close()
	waitOpen(total - 1)
	dialFrom(t, "127.0.0.40", addr)
	waitOpen(total) // admitted: counted, not closed
}
