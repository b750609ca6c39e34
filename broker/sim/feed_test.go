package sim_test

import (
	"context"
	"sync"
	"testing"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/broker/sim"
)

// TestFeedDisconnectNewEpoch: a disconnect fault closes every feed of the account (from
// any session), leaves other accounts alone, and the next subscription has a new epoch.
func TestFeedDisconnectNewEpoch(t *testing.T) {
	srv := sim.New(sim.Config{Seed: 1})
	m := newAccount(t, srv, "m", broker.Hedging)
	other := newAccount(t, srv, "o", broker.Hedging)
	m2 := connect(t, srv, "m")
	f1, _ := m.Subscribe(t.Context())
	f2, _ := m2.Subscribe(t.Context())
	fo, _ := other.Subscribe(t.Context())
	p, err := srv.MasterOpen(t.Context(), "m", broker.MasterOpenRequest{Symbol: "EURUSD", Side: broker.Buy, Volume: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	old := recv(t, f1).Epoch
	recv(t, f2)

	_ = srv.SetFaults(t.Context(), "m", broker.Faults{DisconnectRate: 1})
	_, err = m.Positions(t.Context())
	wantCode(t, err, broker.ErrDisconnected, broker.CodeNoConnection)
	drainClosed(t, f1)
	drainClosed(t, f2)
	srv.ClearFaults("m")

	// The other account's feed still works.
	po, _ := srv.MasterOpen(t.Context(), "o", broker.MasterOpenRequest{Symbol: "EURUSD", Side: broker.Buy, Volume: 0.1})
	if ev := recv(t, fo); ev.Position.Ticket != po.Ticket || ev.Seq != 1 {
		t.Fatalf("other account's event %+v", ev)
	}

	f3, err := m.Subscribe(t.Context())
	if err != nil {
		t.Fatalf("resubscribe: %v", err)
	}
	if err := srv.MasterClose(t.Context(), "m", p.Ticket, 0); err != nil {
		t.Fatal(err)
	}
	ev := recv(t, f3)
	if ev.Epoch == old || ev.Seq != 1 || ev.Kind != broker.Closed {
		t.Fatalf("event after resubscribing %+v: want a new epoch (old %d) and Seq 1", ev, old)
	}
}

// TestMasterTradeDisconnect: a master trade that draws a disconnect executes, but the
// feed drops before its event.
func TestMasterTradeDisconnect(t *testing.T) {
	srv := sim.New(sim.Config{Seed: 1})
	m := newAccount(t, srv, "m", broker.Hedging)
	feed, _ := m.Subscribe(t.Context())
	_ = srv.SetFaults(t.Context(), "m", broker.Faults{DisconnectRate: 1})
	p, err := srv.MasterOpen(t.Context(), "m", broker.MasterOpenRequest{Symbol: "EURUSD", Side: broker.Buy, Volume: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	if evs := drainClosed(t, feed); len(evs) != 0 {
		t.Fatalf("the dropped feed delivered %+v", evs)
	}
	ps, _ := srv.AccountPositions(t.Context(), "m")
	if len(ps) != 1 || ps[0].Ticket != p.Ticket {
		t.Fatalf("master trade did not execute: %+v", ps)
	}
}

// TestFeedDroppedEvents: with a partial drop rate, received events keep their order and
// their Seq shows exactly the gaps of the dropped ones.
func TestFeedDroppedEvents(t *testing.T) {
	const n = 200
	srv := sim.New(sim.Config{Seed: 9, Faults: broker.Faults{DropEventRate: 0.3}})
	m := newAccount(t, srv, "m", broker.Hedging)
	feed, _ := m.Subscribe(t.Context())
	var tickets []int64
	for range n {
		p, err := srv.MasterOpen(t.Context(), "m", broker.MasterOpenRequest{Symbol: "EURUSD", Side: broker.Buy, Volume: 0.01})
		if err != nil {
			t.Fatal(err)
		}
		tickets = append(tickets, p.Ticket)
	}
	_ = m.Close()
	evs := drainClosed(t, feed)
	if len(evs) == 0 || len(evs) == n {
		t.Fatalf("%d of %d events delivered with a 30%% drop rate", len(evs), n)
	}
	last := int64(0)
	for _, ev := range evs {
		if ev.Seq <= last || ev.Seq > n {
			t.Fatalf("Seq %d after %d", ev.Seq, last)
		}
		if ev.Position.Ticket != tickets[ev.Seq-1] {
			t.Fatalf("event Seq %d is ticket %d, want %d", ev.Seq, ev.Position.Ticket, tickets[ev.Seq-1])
		}
		last = ev.Seq
	}
}

// TestFeedOverflowClosesSubscription: a subscriber that does not read loses its
// subscription instead of blocking the server, after the buffered events.
func TestFeedOverflowClosesSubscription(t *testing.T) {
	srv := sim.New(sim.Config{Seed: 1, FeedBuffer: 4})
	m := newAccount(t, srv, "m", broker.Hedging)
	slow, _ := m.Subscribe(t.Context())
	for range 10 {
		if _, err := srv.MasterOpen(t.Context(), "m", broker.MasterOpenRequest{Symbol: "EURUSD", Side: broker.Buy, Volume: 0.01}); err != nil {
			t.Fatal(err)
		}
	}
	evs := drainClosed(t, slow)
	if len(evs) != 4 {
		t.Fatalf("the overflowed feed delivered %d events, want the 4 buffered", len(evs))
	}
	for i, ev := range evs {
		if ev.Seq != int64(i+1) {
			t.Fatalf("buffered event %d has Seq %d", i, ev.Seq)
		}
	}
	again, err := m.Subscribe(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	_, _ = srv.MasterOpen(t.Context(), "m", broker.MasterOpenRequest{Symbol: "EURUSD", Side: broker.Buy, Volume: 0.01})
	if ev := recv(t, again); ev.Epoch == evs[0].Epoch || ev.Seq != 1 {
		t.Fatalf("resubscribed event %+v", ev)
	}
}

// TestFeedInOrderUnderConcurrency: with many writers on one account, each epoch still
// numbers its events 1, 2, 3 ... and a position's events come in the order they happened.
func TestFeedInOrderUnderConcurrency(t *testing.T) {
	const writers, perWriter = 8, 40
	srv := sim.New(sim.Config{Seed: 1})
	m := newAccount(t, srv, "m", broker.Hedging)
	feeds := make([]<-chan broker.Event, 3)
	for i := range feeds {
		feeds[i], _ = connect(t, srv, "m").Subscribe(t.Context())
	}
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for range perWriter {
				if w%2 == 0 {
					p, err := srv.MasterOpen(context.Background(), "m", broker.MasterOpenRequest{Symbol: "EURUSD", Side: broker.Buy, Volume: 0.02})
					if err != nil {
						t.Error(err)
						return
					}
					_ = srv.MasterClose(context.Background(), "m", p.Ticket, 0.01)
					_ = srv.MasterClose(context.Background(), "m", p.Ticket, 0)
					continue
				}
				res, err := m.Open(context.Background(), openReq("EURUSD", broker.Sell, 0.01))
				if err != nil {
					t.Error(err)
					return
				}
				_, _ = m.Modify(context.Background(), broker.ModifyRequest{Order: ord(), Ticket: res.Ticket, TP: 0.5})
				_, _ = m.ClosePosition(context.Background(), broker.CloseRequest{Order: ord(), Ticket: res.Ticket})
			}
		})
	}
	wg.Wait()
	const total = writers * perWriter * 3
	for _, f := range feeds {
		stage := map[int64]broker.EventKind{}
		epoch := int64(0)
		for i := range total {
			ev := recv(t, f)
			if i == 0 {
				epoch = ev.Epoch
			}
			if ev.Epoch != epoch || ev.Seq != int64(i+1) {
				t.Fatalf("event %d: epoch %d Seq %d, want %d/%d", i, ev.Epoch, ev.Seq, epoch, i+1)
			}
			prev := stage[ev.Position.Ticket]
			if (ev.Kind == broker.Opened) != (prev == 0) || prev == broker.Closed {
				t.Fatalf("ticket %d: %v after %v", ev.Position.Ticket, ev.Kind, prev)
			}
			stage[ev.Position.Ticket] = ev.Kind
		}
		for tk, k := range stage {
			if k != broker.Closed {
				t.Fatalf("ticket %d ended %v", tk, k)
			}
		}
	}
}

// TestFeedContextAndClose: a subscription ends with its context or its session; other
// subscriptions of the account live on.
func TestFeedContextAndClose(t *testing.T) {
	srv := sim.New(sim.Config{Seed: 1})
	a := newAccount(t, srv, "m", broker.Hedging)
	b := connect(t, srv, "m")
	ctx, cancel := context.WithCancel(t.Context())
	fa, _ := a.Subscribe(ctx)
	fb, _ := b.Subscribe(t.Context())
	cancel()
	drainClosed(t, fa)
	_, _ = srv.MasterOpen(t.Context(), "m", broker.MasterOpenRequest{Symbol: "EURUSD", Side: broker.Buy, Volume: 0.01})
	if ev := recv(t, fb); ev.Seq != 1 {
		t.Fatalf("event %+v", ev)
	}
	_ = b.Close()
	drainClosed(t, fb)
	if err := b.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := a.Positions(t.Context()); err != nil {
		t.Fatalf("session a broke when b closed: %v", err)
	}
}
