package actors

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/broker/sim"
	"github.com/snapcopier/copier/reconcile"
)

// The request key depends on what the order is; the id is new for every send except the
// resend of an order whose outcome is unknown while that order may still execute.
func TestRequestIDs(t *testing.T) {
	act := reconcile.Action{Kind: reconcile.Open, MasterTicket: 7, Symbol: "EURUSD", Side: broker.Buy, Volume: 0.1}
	key := requestKey(42, 3, act)
	if requestKey(42, 3, act) != key {
		t.Fatal("the key of one action differs between calls")
	}
	for _, other := range []string{requestKey(43, 3, act), requestKey(42, 4, act), requestKey(42, 3, reconcile.Action{Kind: reconcile.Open, MasterTicket: 8})} {
		if other == key {
			t.Fatalf("different follower, epoch or action share key %q", key)
		}
	}
	now := time.Unix(1_000, 0)
	deadline := now.Add(40 * time.Second)
	ids := requestIDs{margin: time.Second}
	first := ids.next(key, now)
	ids.settled(key, first, deadline, now, broker.NewError(broker.ErrUnknownOutcome, broker.CodeTimeout, "timeout"))
	if ids.next(key, now.Add(time.Second)) != first {
		t.Fatal("a resend after an unknown outcome got a new request id")
	}
	if until, ok := ids.inFlight(now); !ok || !until.Equal(deadline.Add(time.Second)) {
		t.Fatalf("in flight until %v (%v), want the order's deadline plus the margin %v", until, ok, deadline.Add(time.Second))
	}
	if ids.next(key, deadline.Add(time.Second)) == first {
		t.Fatal("a send after the unknown order could no longer execute repeats its id")
	}
	if _, ok := ids.inFlight(deadline.Add(time.Second)); ok {
		t.Fatal("an order that can no longer execute is still reported in flight")
	}
	ids.settled(key, first, deadline, now, broker.NewError(broker.ErrRetryable, broker.CodeRequote, "requote"))
	second := ids.next(key, now)
	if second == first {
		t.Fatal("a send after a known refusal repeats the refused request id")
	}
	if _, ok := ids.inFlight(now); ok {
		t.Fatal("an order with a known outcome is still reported in flight")
	}
	// A new incarnation of the actor, or a memory that was reset, never repeats an id.
	seen := map[uuid.UUID]bool{first: true, second: true}
	for range 100 {
		fresh := requestIDs{}
		id := fresh.next(key, now)
		if seen[id] {
			t.Fatalf("request id %v repeated by a fresh memory", id)
		}
		seen[id] = true
	}
}

// TestEqualPartialClosesAcrossIncarnationsBothExecute: two equal partial closes of one
// position, the second by a new incarnation of the account's actor (a respawn at the same
// epoch, or a reset memory), on a trade server that de-duplicates request ids. The second
// must execute, not be answered with the first one's fill: 0.10 lots left, not 0.20.
func TestEqualPartialClosesAcrossIncarnationsBothExecute(t *testing.T) {
	ctx := context.Background()
	srv := sim.New(sim.Config{Seed: 1, Options: broker.ServerOptions{DedupRequests: true}})
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(srv.Provision(ctx, broker.AccountSpec{Login: "f1", Currency: "USD", Balance: 100_000, Leverage: 100, Mode: broker.Hedging}))
	s, err := srv.Connect(ctx, broker.Credentials{Login: "f1"})
	must(err)
	defer s.Close()
	order := func(id uuid.UUID) broker.Order {
		return broker.Order{RequestID: id, Token: 1, Node: "n1", Deadline: time.Now().Add(time.Minute)}
	}
	open := reconcile.Action{Kind: reconcile.Open, MasterTicket: 7, Symbol: "EURUSD", Side: broker.Buy, Volume: 0.3}
	res, err := s.Open(ctx, open.OpenRequest(order((&requestIDs{}).next(requestKey(1, 1, open), time.Now()))))
	must(err)
	partial := reconcile.Action{Kind: reconcile.PartialClose, MasterTicket: 7, FollowerTicket: res.Ticket, Symbol: "EURUSD", Side: broker.Buy, Volume: 0.1}
	key := requestKey(1, 1, partial)
	for range 2 {
		ids := requestIDs{} // what a respawned actor starts with
		id := ids.next(key, time.Now())
		_, err := s.ClosePosition(ctx, partial.CloseRequest(order(id)))
		must(err)
		ids.settled(key, id, time.Now().Add(time.Minute), time.Now(), err)
	}
	ps, err := s.Positions(ctx)
	must(err)
	if len(ps) != 1 || math.Abs(ps[0].Volume-0.1) > 1e-9 {
		t.Fatalf("positions after two partial closes of 0.10 from 0.30: %+v, want 0.10 left", ps)
	}
}
