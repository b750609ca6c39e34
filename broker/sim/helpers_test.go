package sim_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/broker/sim"
)

// waitFor bounds every wait for an event or a condition.
const waitFor = 10 * time.Second

// fakeClock is a manual server clock: prices do not move unless a test advances it.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2025, 3, 3, 10, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// provision creates an account and fails the test on error.
func provision(t testing.TB, srv *sim.Server, spec broker.AccountSpec) {
	t.Helper()
	if err := srv.Provision(t.Context(), spec); err != nil {
		t.Fatalf("provision %s: %v", spec.Login, err)
	}
}

// connect opens a session that closes when the test ends.
func connect(t testing.TB, srv *sim.Server, login string) broker.Session {
	t.Helper()
	s, err := srv.Connect(t.Context(), broker.Credentials{Login: login})
	if err != nil {
		t.Fatalf("connect %s: %v", login, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// newAccount provisions a hedging or netting USD account with 10,000 and connects to it.
func newAccount(t testing.TB, srv *sim.Server, login string, mode broker.AccountMode) broker.Session {
	t.Helper()
	provision(t, srv, broker.AccountSpec{Login: login, Currency: "USD", Balance: 10000, Leverage: 100, Mode: mode})
	return connect(t, srv, login)
}

func ord() broker.Order { return broker.Order{RequestID: uuid.New(), Token: 1, Node: "test"} }

func openReq(symbol string, side broker.Side, vol float64) broker.OpenRequest {
	return broker.OpenRequest{Order: ord(), Symbol: symbol, Side: side, Volume: vol}
}

func mustOpen(t *testing.T, s broker.Session, symbol string, side broker.Side, vol float64) broker.OrderResult {
	t.Helper()
	res, err := s.Open(t.Context(), openReq(symbol, side, vol))
	if err != nil {
		t.Fatalf("open %s %v %v: %v", symbol, side, vol, err)
	}
	return res
}

func mustPositions(t *testing.T, s broker.Session) []broker.Position {
	t.Helper()
	ps, err := s.Positions(t.Context())
	if err != nil {
		t.Fatalf("positions: %v", err)
	}
	return ps
}

// wantCode checks err's class and code.
func wantCode(t *testing.T, err error, class error, code broker.Code) {
	t.Helper()
	var te *broker.TradeError
	if broker.ClassOf(err) != class || !errors.As(err, &te) || te.Code != code {
		t.Fatalf("error %v: want class %v code %d", err, class, code)
	}
}

// recv waits for the next event.
func recv(t *testing.T, ch <-chan broker.Event) broker.Event {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatal("feed closed")
		}
		return ev
	case <-time.After(waitFor):
		t.Fatal("no event")
	}
	return broker.Event{}
}

// drainClosed reads a feed until it closes and returns what it held.
func drainClosed(t *testing.T, ch <-chan broker.Event) []broker.Event {
	t.Helper()
	var evs []broker.Event
	deadline := time.After(waitFor)
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				return evs
			}
			evs = append(evs, ev)
		case <-deadline:
			t.Fatal("feed did not close")
		}
	}
}

// logOf returns the order log entries of one request id.
func logOf(t *testing.T, srv *sim.Server, id uuid.UUID) []broker.OrderLogEntry {
	t.Helper()
	all, err := srv.OrderLog(context.Background(), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []broker.OrderLogEntry
	for _, e := range all {
		if e.RequestID == id {
			out = append(out, e)
		}
	}
	return out
}
