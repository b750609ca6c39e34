package sim_test

import (
	"testing"

	"github.com/google/uuid"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/broker/sim"
)

func TestTokenEnforcement(t *testing.T) {
	srv := sim.New(sim.Config{Seed: 1})
	a := newAccount(t, srv, "a", broker.Hedging)
	b := newAccount(t, srv, "b", broker.Hedging)
	open := func(s broker.Session, token int64) error {
		req := openReq("EURUSD", broker.Buy, 0.01)
		req.Token = token
		_, err := s.Open(t.Context(), req)
		return err
	}

	// The high-water mark is tracked while enforcement is off.
	if err := open(a, 7); err != nil {
		t.Fatal(err)
	}
	if err := open(a, 3); err != nil {
		t.Fatalf("token 3 rejected without enforcement: %v", err)
	}
	if err := srv.SetOptions(t.Context(), broker.ServerOptions{EnforceTokens: true}); err != nil {
		t.Fatal(err)
	}
	wantCode(t, open(a, 6), broker.ErrFenced, broker.CodeFencedToken)
	if err := open(a, 7); err != nil {
		t.Fatalf("equal token rejected: %v", err)
	}
	// Tokens are per account.
	if err := open(b, 1); err != nil {
		t.Fatalf("account b fenced by account a's token: %v", err)
	}
	if err := open(a, 9); err != nil {
		t.Fatal(err)
	}
	wantCode(t, open(a, 8), broker.ErrFenced, broker.CodeFencedToken)

	// A fenced request is not remembered for de-duplication and fencing wins over it.
	_ = srv.SetOptions(t.Context(), broker.ServerOptions{EnforceTokens: true, DedupRequests: true})
	req := openReq("EURUSD", broker.Buy, 0.01)
	req.Token = 9
	if _, err := a.Open(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	req.Token = 8
	_, err := a.Open(t.Context(), req)
	wantCode(t, err, broker.ErrFenced, broker.CodeFencedToken)

	if n := len(mustPositions(t, a)); n != 5 {
		t.Fatalf("account a holds %d positions, want 5", n)
	}
}

func TestDedupWindow(t *testing.T) {
	srv := sim.New(sim.Config{Seed: 1, DedupWindow: 2, Options: broker.ServerOptions{DedupRequests: true}})
	s := newAccount(t, srv, "a", broker.Hedging)
	reqs := []broker.OpenRequest{openReq("EURUSD", broker.Buy, 0.01), openReq("EURUSD", broker.Buy, 0.01), openReq("EURUSD", broker.Buy, 0.01)}
	for _, r := range reqs {
		mustSend(t, s, r)
	}
	mustSend(t, s, reqs[2]) // remembered
	mustSend(t, s, reqs[0]) // forgotten: executes again
	if n := len(mustPositions(t, s)); n != 4 {
		t.Fatalf("%d positions, want 4", n)
	}
	// The nil request id is never de-duplicated.
	nilReq := openReq("EURUSD", broker.Buy, 0.01)
	nilReq.RequestID = uuid.Nil
	mustSend(t, s, nilReq)
	mustSend(t, s, nilReq)
	if n := len(mustPositions(t, s)); n != 6 {
		t.Fatalf("%d positions, want 6", n)
	}
}

func mustSend(t *testing.T, s broker.Session, r broker.OpenRequest) {
	t.Helper()
	if _, err := s.Open(t.Context(), r); err != nil {
		t.Fatal(err)
	}
}
