package sim_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/broker/sim"
)

// TestTimeoutUnknownOutcome: with TimeoutRate 1 every order answers ErrUnknownOutcome;
// across seeds some executed and some did not, the order log says which, and retries
// with the same request id never open a second position when de-duplication is on.
func TestTimeoutUnknownOutcome(t *testing.T) {
	const login, trials = "follower", 40
	executed, lost := 0, 0
	for seed := int64(1); seed <= trials; seed++ {
		srv := sim.New(sim.Config{Seed: seed, Options: broker.ServerOptions{DedupRequests: true}})
		s := newAccount(t, srv, login, broker.Hedging)
		if err := srv.SetFaults(t.Context(), login, broker.Faults{TimeoutRate: 1}); err != nil {
			t.Fatal(err)
		}
		req := openReq("EURUSD", broker.Buy, 0.1)
		_, err := s.Open(t.Context(), req)
		wantCode(t, err, broker.ErrUnknownOutcome, broker.CodeTimeout)

		entries := logOf(t, srv, req.RequestID)
		if len(entries) != 1 {
			t.Fatalf("seed %d: %d log entries for one request", seed, len(entries))
		}
		ps := mustPositions(t, s)
		if entries[0].Executed {
			executed++
			if len(ps) != 1 || ps[0].Ticket != entries[0].Ticket {
				t.Fatalf("seed %d: log says executed (%+v), positions %+v", seed, entries[0], ps)
			}
		} else {
			lost++
			if len(ps) != 0 || entries[0].Result != broker.CodeTimeout {
				t.Fatalf("seed %d: log says not executed (%+v), positions %+v", seed, entries[0], ps)
			}
		}

		for range 5 { // retries that time out as well
			_, err := s.Open(t.Context(), req)
			wantCode(t, err, broker.ErrUnknownOutcome, broker.CodeTimeout)
			if ps := mustPositions(t, s); len(ps) > 1 {
				t.Fatalf("seed %d: a retry with the same request id opened a second position: %+v", seed, ps)
			}
		}
		if err := srv.SetFaults(t.Context(), login, broker.Faults{}); err != nil {
			t.Fatal(err)
		}
		res, err := s.Open(t.Context(), req)
		if err != nil {
			t.Fatalf("seed %d: retry without faults: %v", seed, err)
		}
		ps = mustPositions(t, s)
		if len(ps) != 1 || ps[0].Ticket != res.Ticket {
			t.Fatalf("seed %d: after the retry: result %+v, positions %+v", seed, res, ps)
		}
		execs := 0
		for _, e := range logOf(t, srv, req.RequestID) {
			if e.Executed {
				execs++
			}
		}
		if execs != 1 {
			t.Fatalf("seed %d: the request executed %d times", seed, execs)
		}
	}
	if executed == 0 || lost == 0 {
		t.Fatalf("over %d seeds: %d executed, %d lost; want both", trials, executed, lost)
	}
}

// TestTimeoutWithoutDedupDuplicates shows why a timeout must be reconciled, not resent:
// without de-duplication a resent order that had executed opens a second position.
func TestTimeoutWithoutDedupDuplicates(t *testing.T) {
	for seed := int64(1); ; seed++ {
		if seed > 100 {
			t.Fatal("no seed executed a timed-out order")
		}
		srv := sim.New(sim.Config{Seed: seed})
		s := newAccount(t, srv, "f", broker.Hedging)
		_ = srv.SetFaults(t.Context(), "f", broker.Faults{TimeoutRate: 1})
		req := openReq("EURUSD", broker.Buy, 0.1)
		_, _ = s.Open(t.Context(), req)
		if len(mustPositions(t, s)) == 0 {
			continue
		}
		_ = srv.SetFaults(t.Context(), "f", broker.Faults{})
		if _, err := s.Open(t.Context(), req); err != nil {
			t.Fatal(err)
		}
		if n := len(mustPositions(t, s)); n != 2 {
			t.Fatalf("resending without de-duplication: %d positions, want 2", n)
		}
		return
	}
}

func TestRequote(t *testing.T) {
	srv := sim.New(sim.Config{Seed: 3, Faults: broker.Faults{RequoteRate: 1}})
	s := newAccount(t, srv, "f", broker.Hedging)
	req := openReq("EURUSD", broker.Buy, 0.1)
	_, err := s.Open(t.Context(), req)
	wantCode(t, err, broker.ErrRetryable, broker.CodeRequote)
	if len(mustPositions(t, s)) != 0 {
		t.Fatal("a requoted order executed")
	}
	if es := logOf(t, srv, req.RequestID); len(es) != 1 || es[0].Executed || es[0].Result != broker.CodeRequote {
		t.Fatalf("log of the requote: %+v", es)
	}
	// Requotes are not remembered by de-duplication: the retry executes.
	_ = srv.SetOptions(t.Context(), broker.ServerOptions{DedupRequests: true})
	_ = srv.SetFaults(t.Context(), "", broker.Faults{})
	if _, err := s.Open(t.Context(), req); err != nil {
		t.Fatalf("retry after a requote: %v", err)
	}
}

// TestWorstPriceBoundsTheFill: a market order whose fill would pass its worst price (a
// buy above it, a sell below it) is requoted and opens nothing, logged as a requote; one
// whose worst price the fill meets, or that has none, executes.
func TestWorstPriceBoundsTheFill(t *testing.T) {
	srv := sim.New(sim.Config{Seed: 3, Symbols: []sim.SymbolConfig{{Name: "EURUSD", BaseCurrency: "EUR", QuoteCurrency: "USD",
		ContractSize: 100000, MinLot: 0.01, MaxLot: 100, LotStep: 0.01, Digits: 5, SpreadPoints: 10, Price: 1.1}}})
	s := newAccount(t, srv, "f", broker.Hedging)
	// A flat market: bid 1.09995, ask 1.10005.
	for _, tc := range []struct {
		side   broker.Side
		worst  float64
		filled bool
	}{
		{broker.Buy, 1.10004, false}, {broker.Buy, 1.10005, true}, {broker.Buy, 0, true},
		{broker.Sell, 1.09996, false}, {broker.Sell, 1.09995, true},
	} {
		req := openReq("EURUSD", tc.side, 0.1)
		req.WorstPrice = tc.worst
		before := len(mustPositions(t, s))
		res, err := s.Open(t.Context(), req)
		if !tc.filled {
			wantCode(t, err, broker.ErrRetryable, broker.CodeRequote)
			if n := len(mustPositions(t, s)); n != before {
				t.Fatalf("%v with worst price %v: a refused order opened a position", tc.side, tc.worst)
			}
			if es := logOf(t, srv, req.RequestID); len(es) != 1 || es[0].Executed || es[0].Result != broker.CodeRequote {
				t.Fatalf("log of the refused order: %+v", es)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%v with worst price %v: %v", tc.side, tc.worst, err)
		}
		if tc.worst != 0 && (tc.side == broker.Buy && res.Price > tc.worst || tc.side == broker.Sell && res.Price < tc.worst) {
			t.Fatalf("%v filled at %v beyond its worst price %v", tc.side, res.Price, tc.worst)
		}
	}
}

// TestFaultsRepeat: the same seed and the same calls give the same fault decisions.
func TestFaultsRepeat(t *testing.T) {
	run := func(seed int64) []error {
		srv := sim.New(sim.Config{Seed: seed, Faults: broker.Faults{RequoteRate: 0.3, TimeoutRate: 0.3, DisconnectRate: 0.1}})
		s := newAccount(t, srv, "f", broker.Hedging)
		var classes []error
		for range 60 {
			_, err := s.Open(t.Context(), openReq("EURUSD", broker.Buy, 0.01))
			classes = append(classes, broker.ClassOf(err))
		}
		return classes
	}
	a, b := run(11), run(11)
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("call %d: %v then %v with the same seed", i, a[i], b[i])
		}
	}
	c := run(12)
	same := true
	for i := range a {
		same = same && a[i] == c[i]
	}
	if same {
		t.Fatal("seeds 11 and 12 made the same 60 decisions")
	}
}

// TestPerAccountFaultsOverrideGlobal: an account's own profile wins until cleared.
func TestPerAccountFaultsOverrideGlobal(t *testing.T) {
	srv := sim.New(sim.Config{Seed: 1, Faults: broker.Faults{RequoteRate: 1}})
	a := newAccount(t, srv, "a", broker.Hedging)
	b := newAccount(t, srv, "b", broker.Hedging)
	if err := srv.SetFaults(t.Context(), "a", broker.Faults{}); err != nil {
		t.Fatal(err)
	}
	mustOpen(t, a, "EURUSD", broker.Buy, 0.01)
	_, err := b.Open(t.Context(), openReq("EURUSD", broker.Buy, 0.01))
	wantCode(t, err, broker.ErrRetryable, broker.CodeRequote)
	srv.ClearFaults("a")
	_, err = a.Open(t.Context(), openReq("EURUSD", broker.Buy, 0.01))
	wantCode(t, err, broker.ErrRetryable, broker.CodeRequote)

	err = srv.SetFaults(t.Context(), "", broker.Faults{TimeoutRate: 1.5})
	wantCode(t, err, broker.ErrPermanent, broker.CodeInvalidRequest)
	err = srv.SetFaults(t.Context(), "nobody", broker.Faults{})
	wantCode(t, err, broker.ErrPermanent, broker.CodeInvalidRequest)
}

// TestLatencyHonoursContext: a context that ends during the injected latency fails the
// call as not sent, and nothing executes.
func TestLatencyHonoursContext(t *testing.T) {
	srv := sim.New(sim.Config{Seed: 1})
	s := newAccount(t, srv, "f", broker.Hedging)
	if err := srv.SetFaults(t.Context(), "f", broker.Faults{Latency: time.Hour}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	req := openReq("EURUSD", broker.Buy, 0.1)
	_, err := s.Open(ctx, req)
	if broker.ClassOf(err) != broker.ErrDisconnected || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %v: want ErrDisconnected wrapping the deadline", err)
	}
	srv.ClearFaults("f")
	if ps := mustPositions(t, s); len(ps) != 0 {
		t.Fatalf("an order whose context ended during latency executed: %+v", ps)
	}
	if es := logOf(t, srv, req.RequestID); len(es) != 0 {
		t.Fatalf("an unsent order was logged: %+v", es)
	}
}
