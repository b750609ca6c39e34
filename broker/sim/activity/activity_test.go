package activity_test

import (
	"context"
	"testing"
	"time"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/broker/sim"
	"github.com/snapcopier/copier/broker/sim/activity"
)

// TestGeneratorTradesEveryKindWithValidStops: a seeded run makes every kind of trade, the
// counts add up, and every master position carries an SL and a TP on the right sides.
func TestGeneratorTradesEveryKindWithValidStops(t *testing.T) {
	ctx := context.Background()
	s := sim.New(sim.Config{Seed: 3, AutoProvision: true})
	masters := []string{"m1", "m2"}
	for _, m := range masters {
		if err := s.Provision(ctx, broker.AccountSpec{Login: m, Currency: "USD", Balance: 1e6, Leverage: 100, Mode: broker.Hedging}); err != nil {
			t.Fatal(err)
		}
	}
	quotes, err := s.Connect(ctx, broker.Credentials{Login: "quotes"})
	if err != nil {
		t.Fatal(err)
	}
	defer quotes.Close()
	g := activity.New(activity.Config{Control: s, Quotes: quotes, Masters: masters, Seed: 9, Comment: "test"})
	for i := 0; i < 300; i++ {
		g.Step(ctx)
	}
	c := g.Counts()
	if c.Failures != 0 || c.Events() != 300 {
		t.Fatalf("counts %+v: want 300 trades and no failure", c)
	}
	if c.Opens == 0 || c.Modifies == 0 || c.Partials == 0 || c.Closes == 0 {
		t.Fatalf("not every kind of trade was made: %+v", c)
	}
	open := 0
	for _, m := range masters {
		ps, err := s.AccountPositions(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		open += len(ps)
		for _, p := range ps {
			ok := p.SL > 0 && p.TP > 0 && ((p.Side == broker.Buy && p.SL < p.OpenPrice && p.TP > p.OpenPrice) ||
				(p.Side == broker.Sell && p.SL > p.OpenPrice && p.TP < p.OpenPrice))
			if !ok && p.SL != 0 {
				// A modify moves stops around the current price, which may have moved past the
				// open price; only the sides relative to each other must hold.
				ok = (p.Side == broker.Buy && p.SL < p.TP) || (p.Side == broker.Sell && p.SL > p.TP)
			}
			if !ok {
				t.Errorf("position with bad stops: %+v", p)
			}
		}
	}
	if int64(open) != c.Opens-c.Closes {
		t.Fatalf("%d positions open, want opens − closes = %d", open, c.Opens-c.Closes)
	}
	// WaitTrade sees the next trade.
	done := make(chan bool)
	go func() { done <- g.WaitTrade(ctx, 10*time.Second) }()
	for {
		g.Step(ctx)
		select {
		case ok := <-done:
			if !ok {
				t.Fatal("WaitTrade missed a trade")
			}
			return
		default:
		}
	}
}
