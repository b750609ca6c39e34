package fixfront_test

import (
	"bytes"
	"errors"
	"net"
	"testing"
	"time"

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
