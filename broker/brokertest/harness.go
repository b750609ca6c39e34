package brokertest

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/snapcopier/copier/broker"
)

// eventWait bounds every wait for a feed event or a channel close.
const eventWait = 10 * time.Second

// harness is one subtest's view of a fresh server.
type harness struct {
	t   *testing.T
	ctx context.Context
	env Env
}

func newHarness(t *testing.T, env Env) *harness {
	t.Helper()
	if env.Broker == nil || env.Control == nil {
		t.Fatal("brokertest: newEnv returned an Env without Broker or Control")
	}
	return &harness{t: t, ctx: t.Context(), env: env}
}

// provision creates an account with a large balance (so margin never gets in the way)
// and returns its spec.
func (h *harness) provision(login string, mode broker.AccountMode, suffix string) broker.AccountSpec {
	h.t.Helper()
	spec := broker.AccountSpec{
		Login: login, Password: "pw-" + login, Currency: "USD",
		Balance: 1e9, Leverage: 100, Mode: mode, SymbolSuffix: suffix,
	}
	h.must(h.env.Control.Provision(h.ctx, spec))
	return spec
}

// connect opens a session for an account provisioned by provision; the session closes
// when the test ends.
func (h *harness) connect(spec broker.AccountSpec) broker.Session {
	h.t.Helper()
	s, err := h.env.Broker.Connect(h.ctx, broker.Credentials{Login: spec.Login, Server: "brokertest", Password: spec.Password})
	h.must(err)
	h.t.Cleanup(func() { _ = s.Close() })
	return s
}

// account provisions and connects a hedging or netting account.
func (h *harness) account(login string, mode broker.AccountMode) broker.Session {
	h.t.Helper()
	return h.connect(h.provision(login, mode, ""))
}

// symbol picks the symbol the suite trades: EURUSD (with suffix) when offered, else the
// first tradable one.
func (h *harness) symbol(s broker.Session) broker.SymbolSpec {
	h.t.Helper()
	specs, err := s.Symbols(h.ctx)
	h.must(err)
	var pick *broker.SymbolSpec
	for i := range specs {
		sp := &specs[i]
		if !sp.TradeAllowed {
			continue
		}
		if pick == nil || strings.HasPrefix(sp.Name, "EURUSD") && !strings.HasPrefix(pick.Name, "EURUSD") {
			pick = sp
		}
	}
	if pick == nil {
		h.t.Fatal("brokertest: the server offers no tradable symbol")
	}
	if pick.MaxLot < 4*pick.MinLot || !(pick.Bid > 0) || !(pick.Ask >= pick.Bid) {
		h.t.Fatalf("brokertest: symbol %+v is unusable (needs MaxLot >= 4*MinLot and a quote)", *pick)
	}
	return *pick
}

// lots returns n minimum lots, on the lot step.
func lots(sp broker.SymbolSpec, n int) float64 {
	steps := math.Round(sp.MinLot / sp.LotStep)
	return math.Round(float64(n)*steps*sp.LotStep*1e8) / 1e8
}

// order returns a fresh order header.
func order(token int64) broker.Order {
	return broker.Order{RequestID: uuid.New(), Token: token, Node: "brokertest"}
}

// open opens a market position without stops and fails the test on error.
func (h *harness) open(s broker.Session, sym string, side broker.Side, vol float64) broker.OrderResult {
	h.t.Helper()
	res, err := s.Open(h.ctx, broker.OpenRequest{Order: order(1), Symbol: sym, Side: side, Volume: vol})
	h.must(err)
	if res.Ticket == 0 || !(res.Price > 0) || !sameVolume(res.Volume, vol) {
		h.t.Fatalf("open %s %v %v: implausible result %+v", sym, side, vol, res)
	}
	return res
}

// positions reads the session's positions and checks the Controller sees the same.
func (h *harness) positions(s broker.Session, login string) []broker.Position {
	h.t.Helper()
	ps, err := s.Positions(h.ctx)
	h.must(err)
	cs, err := h.env.Control.AccountPositions(h.ctx, login)
	h.must(err)
	if !samePositions(ps, cs) {
		h.t.Fatalf("session positions %+v differ from Controller positions %+v", ps, cs)
	}
	return ps
}

// findPosition returns the position with ticket, failing the test when absent.
func (h *harness) findPosition(ps []broker.Position, ticket int64) broker.Position {
	h.t.Helper()
	for _, p := range ps {
		if p.Ticket == ticket {
			return p
		}
	}
	h.t.Fatalf("no position with ticket %d in %+v", ticket, ps)
	return broker.Position{}
}

// must fails the test on a non-nil error.
func (h *harness) must(err error) {
	h.t.Helper()
	if err != nil {
		h.t.Fatalf("unexpected error: %v", err)
	}
}

// wantErr checks that err is of class (and of no other) and, when code is not 0, that it
// is a *broker.TradeError with that code.
func (h *harness) wantErr(err error, class error, code broker.Code) {
	h.t.Helper()
	if err == nil {
		h.t.Fatalf("got no error, want %v (code %d)", class, code)
	}
	if got := broker.ClassOf(err); got != class {
		h.t.Fatalf("error %q has class %v, want %v", err, got, class)
	}
	if code == 0 {
		return
	}
	var te *broker.TradeError
	if !errors.As(err, &te) {
		h.t.Fatalf("error %q is not a *broker.TradeError (want code %d)", err, code)
	}
	if te.Code != code {
		h.t.Fatalf("error %q has code %d, want %d", err, te.Code, code)
	}
}

// nextEvent waits for the next event of a feed.
func (h *harness) nextEvent(ch <-chan broker.Event) broker.Event {
	h.t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			h.t.Fatal("feed closed while an event was expected")
		}
		return ev
	case <-time.After(eventWait):
		h.t.Fatalf("no feed event within %v", eventWait)
	}
	return broker.Event{}
}

// waitClosed drains a feed until it closes.
func (h *harness) waitClosed(ch <-chan broker.Event) {
	h.t.Helper()
	deadline := time.After(eventWait)
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-deadline:
			h.t.Fatalf("feed still open after %v", eventWait)
		}
	}
}

// wantEvent checks an event's kind, ticket, epoch and sequence number.
func (h *harness) wantEvent(ev broker.Event, kind broker.EventKind, ticket, epoch, seq int64) {
	h.t.Helper()
	if ev.Kind != kind || ev.Position.Ticket != ticket || ev.Epoch != epoch || ev.Seq != seq {
		h.t.Fatalf("event %+v: want kind %v ticket %d epoch %d seq %d", ev, kind, ticket, epoch, seq)
	}
	if ev.ServerTime.IsZero() {
		h.t.Fatalf("event %+v has no server time", ev)
	}
}

// orderLog returns the whole order log.
func (h *harness) orderLog() []broker.OrderLogEntry {
	h.t.Helper()
	log, err := h.env.Control.OrderLog(h.ctx, 0, 0)
	h.must(err)
	return log
}

// logFor returns the log entries of one request id, in order.
func logFor(log []broker.OrderLogEntry, id uuid.UUID) []broker.OrderLogEntry {
	var out []broker.OrderLogEntry
	for _, e := range log {
		if e.RequestID == id {
			out = append(out, e)
		}
	}
	return out
}

func sameVolume(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func samePositions(a, b []broker.Position) bool {
	if len(a) != len(b) {
		return false
	}
	byTicket := make(map[int64]broker.Position, len(a))
	for _, p := range a {
		byTicket[p.Ticket] = p
	}
	for _, q := range b {
		p, ok := byTicket[q.Ticket]
		if !ok || p.Symbol != q.Symbol || p.Side != q.Side || !sameVolume(p.Volume, q.Volume) ||
			p.SL != q.SL || p.TP != q.TP || p.Magic != q.Magic || p.Comment != q.Comment {
			return false
		}
	}
	return true
}
