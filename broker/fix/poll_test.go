package fix_test

import (
	"testing"
	"time"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/broker/fix"
)

// With PollPositions the master feed reads positions and reports what changed — trades
// made outside the session (here by the simulator's control API, as a trader's terminal
// would) included — in one epoch with consecutive sequence numbers; the feed ends with its
// session.
func TestPollingFeed(t *testing.T) {
	e := newEnv(t, envOptions{client: fix.Config{PollPositions: 20 * time.Millisecond}})
	ctx := t.Context()
	if err := e.sim.Provision(ctx, broker.AccountSpec{Login: "m1", Password: "pw", Balance: 100_000, Leverage: 100, Mode: broker.Hedging}); err != nil {
		t.Fatal(err)
	}
	before, err := e.sim.MasterOpen(ctx, "m1", broker.MasterOpenRequest{Symbol: "EURUSD", Side: broker.Sell, Volume: 0.3})
	if err != nil {
		t.Fatal(err)
	}
	s, err := e.broker.Connect(ctx, broker.Credentials{Login: "m1", Password: "pw"})
	if err != nil {
		t.Fatal(err)
	}
	events, err := s.Subscribe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	next := func(want broker.EventKind, ticket int64) broker.Event {
		t.Helper()
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatalf("feed ended waiting for %v of %d", want, ticket)
			}
			if ev.Kind != want || ev.Position.Ticket != ticket || ev.Login != "m1" {
				t.Fatalf("event %+v, want %v of ticket %d", ev, want, ticket)
			}
			return ev
		case <-time.After(30 * time.Second):
			t.Fatalf("no %v of ticket %d", want, ticket)
		}
		return broker.Event{}
	}
	p, err := e.sim.MasterOpen(ctx, "m1", broker.MasterOpenRequest{Symbol: "EURUSD", Side: broker.Buy, Volume: 1})
	if err != nil {
		t.Fatal(err)
	}
	first := next(broker.Opened, p.Ticket) // the position open before the subscription was the base: no event
	if first.Seq != 1 || first.Position.Volume != 1 {
		t.Fatalf("first event %+v, want seq 1 with the open volume", first)
	}
	if err := e.sim.MasterClose(ctx, "m1", p.Ticket, 0.4); err != nil {
		t.Fatal(err)
	}
	if ev := next(broker.PartiallyClosed, p.Ticket); ev.Seq != 2 || ev.Epoch != first.Epoch || ev.Position.Volume != 0.6 {
		t.Fatalf("partial close %+v, want seq 2 of epoch %d, volume 0.6", ev, first.Epoch)
	}
	if _, err := e.sim.MasterModify(ctx, "m1", before.Ticket, 0, 0.9); err != nil {
		t.Fatal(err)
	}
	if ev := next(broker.Modified, before.Ticket); ev.Seq != 3 || ev.Position.TP != 0.9 {
		t.Fatalf("modify %+v, want seq 3 with the new take profit", ev)
	}
	if err := e.sim.MasterClose(ctx, "m1", p.Ticket, 0); err != nil {
		t.Fatal(err)
	}
	if ev := next(broker.Closed, p.Ticket); ev.Seq != 4 {
		t.Fatalf("close %+v, want seq 4", ev)
	}
	_ = s.Close()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case _, ok := <-events:
			if !ok {
				return
			}
		case <-deadline:
			t.Fatal("the feed outlived its session")
		}
	}
}
