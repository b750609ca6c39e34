package bridge_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.uber.org/goleak"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/broker/bridge"
	"github.com/snapcopier/copier/broker/sim"
	"github.com/snapcopier/copier/internal/testwait"
)

const testToken = "test-token"

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// newSim returns a fresh simulator that provisions unknown accounts on Connect.
func newSim() *sim.Server {
	return sim.New(sim.Config{Seed: 1, AutoProvision: true})
}

// testServer is a bridge server on a loopback listener.
type testServer struct {
	srv  *bridge.Server
	addr string
	once sync.Once
	done chan error
}

// startServer serves b and ctl on addr ("127.0.0.1:0" for any port) with testToken
// unless opts has a token. The server stops when the test ends, if not before.
func startServer(tb testing.TB, addr string, b broker.Broker, ctl broker.Controller, opts bridge.ServerOptions) *testServer {
	tb.Helper()
	if opts.Token == "" {
		opts.Token = testToken
	}
	l := listen(tb, addr)
	ts := &testServer{srv: bridge.NewServer(b, ctl, opts), addr: l.Addr().String(), done: make(chan error, 1)}
	go func() { ts.done <- ts.srv.Serve(l) }()
	tb.Cleanup(func() { ts.stop(tb) })
	return ts
}

// listen listens on addr, retrying for a while when a just-closed port is not free yet.
func listen(tb testing.TB, addr string) net.Listener {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		l, err := net.Listen("tcp", addr)
		if err == nil {
			return l
		}
		if time.Now().After(deadline) {
			tb.Fatalf("listen %s: %v", addr, err)
		}
		<-time.After(10 * time.Millisecond)
	}
}

// stop closes the server and checks Serve's result.
func (ts *testServer) stop(tb testing.TB) {
	ts.once.Do(func() {
		if err := ts.srv.Close(); err != nil {
			tb.Errorf("server close: %v", err)
		}
		if err := <-ts.done; !errors.Is(err, bridge.ErrServerClosed) {
			tb.Errorf("Serve returned %v, want ErrServerClosed", err)
		}
	})
}

// dial connects a client with testToken unless opts has a token; it closes when the test
// ends.
func dial(tb testing.TB, addr string, opts bridge.ClientOptions) *bridge.Client {
	tb.Helper()
	if opts.Token == "" {
		opts.Token = testToken
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := bridge.Dial(ctx, addr, opts)
	if err != nil {
		tb.Fatalf("dial: %v", err)
	}
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

// connect opens a session that closes when the test ends.
func connect(tb testing.TB, b broker.Broker, login string) broker.Session {
	tb.Helper()
	s, err := b.Connect(tb.Context(), broker.Credentials{Login: login, Server: "sim"})
	if err != nil {
		tb.Fatalf("connect %s: %v", login, err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

// openReq is a market order for the minimum EURUSD lot.
func openReq(side broker.Side) broker.OpenRequest {
	return broker.OpenRequest{Order: order(), Symbol: "EURUSD", Side: side, Volume: 0.01}
}

func order() broker.Order {
	return broker.Order{RequestID: uuid.New(), Token: 1, Node: "bridge-test"}
}

// wantClass fails the test unless err is of class and, when code is not 0, carries it.
func wantClass(tb testing.TB, err error, class error, code broker.Code) {
	tb.Helper()
	if err == nil {
		tb.Fatalf("no error, want %v", class)
	}
	if got := broker.ClassOf(err); got != class {
		tb.Fatalf("error %q: class %v, want %v", err, got, class)
	}
	if code == 0 {
		return
	}
	var te *broker.TradeError
	if !errors.As(err, &te) {
		tb.Fatalf("error %q is not a *broker.TradeError", err)
	}
	if te.Code != code {
		tb.Fatalf("error %q: code %d, want %d", err, te.Code, code)
	}
}

// eventually polls f until it returns nil or d passes.
func eventually(tb testing.TB, d time.Duration, what string, f func() error) {
	tb.Helper()
	testwait.For(tb, what, d, func() (bool, string) {
		if err := f(); err != nil {
			return false, err.Error()
		}
		return true, ""
	})
}

// recv waits for the next event, failing when the channel closes or nothing comes.
func recv(tb testing.TB, ch <-chan broker.Event) broker.Event {
	tb.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			tb.Fatal("feed closed, want an event")
		}
		return ev
	case <-time.After(10 * time.Second):
		tb.Fatal("no event within 10s")
	}
	return broker.Event{}
}

// waitClosed drains ch until it closes.
func waitClosed(tb testing.TB, ch <-chan broker.Event) int {
	tb.Helper()
	n := 0
	deadline := time.After(10 * time.Second)
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return n
			}
			n++
		case <-deadline:
			tb.Fatal("feed still open after 10s")
		}
	}
}

func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }
