package fix_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/broker/fix"
	"github.com/snapcopier/copier/broker/fix/fixwire"
	"github.com/snapcopier/copier/broker/sim/fixfront"
)

// logEntry returns the server's order log entry of a request id (ok false when the request
// never reached the server).
func logEntry(t *testing.T, e *env, id uuid.UUID) (broker.OrderLogEntry, bool) {
	t.Helper()
	log, err := e.sim.OrderLog(context.Background(), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, le := range log {
		if le.RequestID == id {
			return le, true
		}
	}
	return broker.OrderLogEntry{}, false
}

// The order's deadline travels on the wire (9003) to the server, and the front refuses, by
// its own clock, an order that arrives after it: ErrExpired, never executed, never
// reaching the server. Open, close and modify alike.
func TestFrontRefusesLateOrders(t *testing.T) {
	var delay atomic.Int64 // how late every order arrives, by the front's clock
	e := newEnv(t, envOptions{front: fixfront.Options{Now: func() time.Time { return time.Now().Add(time.Duration(delay.Load())) }}})
	s := connect(t, e, "late")
	sym := firstSymbol(t, s)
	ctx := t.Context()
	inTime := func() broker.Order {
		o := order()
		o.Deadline = time.Now().Add(time.Minute)
		return o
	}

	first := inTime()
	res, err := s.Open(ctx, broker.OpenRequest{Order: first, Symbol: sym.Name, Side: broker.Buy, Volume: 2 * sym.MinLot})
	if err != nil {
		t.Fatal(err)
	}
	if le, ok := logEntry(t, e, first.RequestID); !ok || !le.Deadline.Equal(first.Deadline) || !le.Executed {
		t.Fatalf("the order in time reached the server as %+v (found %v), want executed with deadline %v", le, ok, first.Deadline)
	}

	delay.Store(int64(2 * time.Minute)) // from now on every order arrives after its deadline
	open, closing, modify := inTime(), inTime(), inTime()
	_, err = s.Open(ctx, broker.OpenRequest{Order: open, Symbol: sym.Name, Side: broker.Buy, Volume: sym.MinLot})
	wantExpired(t, err)
	_, err = s.ClosePosition(ctx, broker.CloseRequest{Order: closing, Ticket: res.Ticket, Volume: sym.MinLot})
	wantExpired(t, err)
	_, err = s.Modify(ctx, broker.ModifyRequest{Order: modify, Ticket: res.Ticket, SL: 0.5 * sym.Bid})
	wantExpired(t, err)
	for _, o := range []broker.Order{open, closing, modify} {
		if le, ok := logEntry(t, e, o.RequestID); ok {
			t.Errorf("a late order reached the server: %+v", le)
		}
	}
	ps, err := s.Positions(ctx)
	if err != nil || len(ps) != 1 || ps[0].Volume != 2*sym.MinLot || ps[0].SL != 0 {
		t.Fatalf("positions %+v (%v): want the first open alone, unchanged", ps, err)
	}
}

func wantExpired(t *testing.T, err error) {
	t.Helper()
	wantClass(t, err, broker.ErrExpired)
	var te *broker.TradeError
	if !errors.As(err, &te) || te.Code != broker.CodeExpired {
		t.Fatalf("error %v: want code %d", err, broker.CodeExpired)
	}
}

// A resend after an unknown outcome (the same ClOrdID with PossResend) carries the fence of
// the gate check that let the resend out: its later deadline, not the first send's, which
// the venue would refuse as expired.
func TestResendCarriesItsOwnDeadline(t *testing.T) {
	var mu sync.Mutex
	var sent []string
	e := newEnv(t, envOptions{client: fix.Config{ReplyTimeout: 300 * time.Millisecond, StatusTimeout: -1}, wire: func(raw string) {
		mu.Lock()
		sent = append(sent, raw)
		mu.Unlock()
	}})
	s := connect(t, e, "refence")
	sym := firstSymbol(t, s)
	ctx := t.Context()
	if err := e.sim.SetFaults(ctx, "refence", broker.Faults{TimeoutRate: 1}); err != nil {
		t.Fatal(err)
	}
	o := order()
	o.Deadline = time.Now().Add(time.Minute)
	_, err := s.Open(ctx, broker.OpenRequest{Order: o, Symbol: sym.Name, Side: broker.Buy, Volume: sym.MinLot})
	wantClass(t, err, broker.ErrUnknownOutcome)
	o.Deadline = o.Deadline.Add(time.Minute) // the resend's own gate check
	_, _ = s.Open(ctx, broker.OpenRequest{Order: o, Symbol: sym.Name, Side: broker.Buy, Volume: sym.MinLot})
	mu.Lock()
	defer mu.Unlock()
	var deadlines []string
	for _, raw := range sent {
		if strings.Contains(raw, "\x0111="+o.RequestID.String()+"\x01") && strings.Contains(raw, "\x0135=D\x01") {
			d, _, _ := strings.Cut(strings.SplitN(raw, "\x019003=", 2)[1], "\x01")
			deadlines = append(deadlines, d)
			if len(deadlines) == 2 && !strings.Contains(raw, "\x0197=Y\x01") {
				t.Errorf("the resend has no PossResend: %q", raw)
			}
		}
	}
	want := []string{fixwire.FormatTime(o.Deadline.Add(-time.Minute)), fixwire.FormatTime(o.Deadline)}
	if len(deadlines) != 2 || deadlines[0] != want[0] || deadlines[1] != want[1] {
		t.Fatalf("deadlines on the wire %v, want %v (the resend's own)", deadlines, want)
	}
}
