package brokertest

import (
	"context"

	"github.com/snapcopier/copier/broker"
)

// feedCases returns the checks of the position event feed.
func feedCases() []testCase {
	return []testCase{
		{"FeedEventKinds", testFeedEventKinds},
		{"FeedInOrder", testFeedInOrder},
		{"FeedNewEpochPerSubscription", testFeedEpochs},
		{"FeedClosesWithContextAndSession", testFeedCloses},
		{"FeedDroppedEventGap", testDroppedEventGap},
		{"FeedDisconnectFault", testDisconnectFault},
	}
}

func testFeedEventKinds(h *harness) {
	const login = "master-kinds"
	s := h.account(login, broker.Hedging)
	sym := h.symbol(s)
	feed, err := s.Subscribe(h.ctx)
	h.must(err)
	c := h.env.Control

	p, err := c.MasterOpen(h.ctx, login, broker.MasterOpenRequest{Symbol: sym.Name, Side: broker.Buy, Volume: lots(sym, 3), Magic: 7, Comment: "master"})
	h.must(err)
	ev := h.nextEvent(feed)
	epoch := ev.Epoch
	h.wantEvent(ev, broker.Opened, p.Ticket, epoch, 1)
	if ev.Login != login || ev.Position.Symbol != sym.Name || ev.Position.Side != broker.Buy ||
		!sameVolume(ev.Position.Volume, lots(sym, 3)) || ev.Position.Magic != 7 || ev.Position.Comment != "master" {
		h.t.Fatalf("opened event %+v does not describe position %+v", ev, p)
	}

	sl, tp := sym.Bid*0.95, sym.Ask*1.05
	_, err = c.MasterModify(h.ctx, login, p.Ticket, sl, tp)
	h.must(err)
	ev = h.nextEvent(feed)
	h.wantEvent(ev, broker.Modified, p.Ticket, epoch, 2)
	if !near(ev.Position.SL, sl, sym.Point) || !near(ev.Position.TP, tp, sym.Point) {
		h.t.Fatalf("modified event %+v: want stops %v/%v", ev, sl, tp)
	}

	h.must(c.MasterClose(h.ctx, login, p.Ticket, lots(sym, 1)))
	ev = h.nextEvent(feed)
	if ev.Kind != broker.PartiallyClosed || ev.Epoch != epoch || ev.Seq != 3 || !sameVolume(ev.Position.Volume, lots(sym, 2)) {
		h.t.Fatalf("event %+v: want partially_closed seq 3 with %v lots remaining", ev, lots(sym, 2))
	}
	rest := ev.Position.Ticket

	h.must(c.MasterClose(h.ctx, login, rest, 0))
	ev = h.nextEvent(feed)
	h.wantEvent(ev, broker.Closed, rest, epoch, 4)
	if !sameVolume(ev.Position.Volume, lots(sym, 2)) {
		h.t.Fatalf("closed event %+v: want the last state (%v lots)", ev, lots(sym, 2))
	}

	// Orders from sessions produce events too.
	res := h.open(s, sym.Name, broker.Sell, lots(sym, 1))
	h.wantEvent(h.nextEvent(feed), broker.Opened, res.Ticket, epoch, 5)
	_, err = s.ClosePosition(h.ctx, broker.CloseRequest{Order: order(1), Ticket: res.Ticket})
	h.must(err)
	h.wantEvent(h.nextEvent(feed), broker.Closed, res.Ticket, epoch, 6)
}

func testFeedInOrder(h *harness) {
	const login, n = "master-order", 50
	s := h.account(login, broker.Hedging)
	sym := h.symbol(s)
	feed, err := s.Subscribe(h.ctx)
	h.must(err)
	tickets := make([]int64, n)
	for i := range tickets {
		p, err := h.env.Control.MasterOpen(h.ctx, login, broker.MasterOpenRequest{Symbol: sym.Name, Side: broker.Buy, Volume: sym.MinLot})
		h.must(err)
		tickets[i] = p.Ticket
	}
	var epoch int64
	for i, tk := range tickets {
		ev := h.nextEvent(feed)
		if i == 0 {
			epoch = ev.Epoch
		}
		h.wantEvent(ev, broker.Opened, tk, epoch, int64(i+1))
	}
}

func testFeedEpochs(h *harness) {
	const login = "master-epochs"
	spec := h.provision(login, broker.Hedging, "")
	s1, s2 := h.connect(spec), h.connect(spec)
	sym := h.symbol(s1)
	f1, err := s1.Subscribe(h.ctx)
	h.must(err)
	f2, err := s2.Subscribe(h.ctx)
	h.must(err)
	f3, err := s1.Subscribe(h.ctx)
	h.must(err)
	p, err := h.env.Control.MasterOpen(h.ctx, login, broker.MasterOpenRequest{Symbol: sym.Name, Side: broker.Buy, Volume: sym.MinLot})
	h.must(err)
	seen := map[int64]bool{}
	for _, f := range []<-chan broker.Event{f1, f2, f3} {
		ev := h.nextEvent(f)
		h.wantEvent(ev, broker.Opened, p.Ticket, ev.Epoch, 1)
		if seen[ev.Epoch] {
			h.t.Fatalf("two subscriptions share epoch %d", ev.Epoch)
		}
		seen[ev.Epoch] = true
	}
}

func testFeedCloses(h *harness) {
	const login = "master-closes"
	s := h.account(login, broker.Hedging)
	ctx, cancel := context.WithCancel(h.ctx)
	f1, err := s.Subscribe(ctx)
	h.must(err)
	f2, err := s.Subscribe(h.ctx)
	h.must(err)
	cancel()
	h.waitClosed(f1)
	h.must(s.Close())
	h.waitClosed(f2)
}

func testDroppedEventGap(h *harness) {
	const login = "master-drop"
	s := h.account(login, broker.Hedging)
	sym := h.symbol(s)
	c := h.env.Control
	feed, err := s.Subscribe(h.ctx)
	h.must(err)
	p, err := c.MasterOpen(h.ctx, login, broker.MasterOpenRequest{Symbol: sym.Name, Side: broker.Buy, Volume: sym.MinLot})
	h.must(err)
	ev := h.nextEvent(feed)
	h.wantEvent(ev, broker.Opened, p.Ticket, ev.Epoch, 1)
	epoch := ev.Epoch

	h.must(c.SetFaults(h.ctx, login, broker.Faults{DropEventRate: 1}))
	_, err = c.MasterModify(h.ctx, login, p.Ticket, sym.Bid*0.95, 0)
	h.must(err)
	h.must(c.SetFaults(h.ctx, login, broker.Faults{}))
	h.must(c.MasterClose(h.ctx, login, p.Ticket, 0))

	// The Modified event used Seq 2 and was not delivered: the next one shows the gap.
	h.wantEvent(h.nextEvent(feed), broker.Closed, p.Ticket, epoch, 3)
}

func testDisconnectFault(h *harness) {
	const login = "master-disconnect"
	s := h.account(login, broker.Hedging)
	sym := h.symbol(s)
	c := h.env.Control
	feed, err := s.Subscribe(h.ctx)
	h.must(err)
	p, err := c.MasterOpen(h.ctx, login, broker.MasterOpenRequest{Symbol: sym.Name, Side: broker.Buy, Volume: sym.MinLot})
	h.must(err)
	first := h.nextEvent(feed)
	h.wantEvent(first, broker.Opened, p.Ticket, first.Epoch, 1)

	h.must(c.SetFaults(h.ctx, login, broker.Faults{DisconnectRate: 1}))
	_, err = s.Open(h.ctx, broker.OpenRequest{Order: order(1), Symbol: sym.Name, Side: broker.Buy, Volume: sym.MinLot})
	h.wantErr(err, broker.ErrDisconnected, 0)
	h.waitClosed(feed)
	h.must(c.SetFaults(h.ctx, login, broker.Faults{}))

	// Nothing executed, the session is still usable, and a new subscription has a new epoch.
	if ps := h.positions(s, login); len(ps) != 1 || ps[0].Ticket != p.Ticket {
		h.t.Fatalf("after the disconnect: positions %+v, want only %d", ps, p.Ticket)
	}
	feed, err = s.Subscribe(h.ctx)
	h.must(err)
	h.must(c.MasterClose(h.ctx, login, p.Ticket, 0))
	ev := h.nextEvent(feed)
	h.wantEvent(ev, broker.Closed, p.Ticket, ev.Epoch, 1)
	if ev.Epoch == first.Epoch {
		h.t.Fatalf("the feed restarted in epoch %d, want a new one", ev.Epoch)
	}
}
