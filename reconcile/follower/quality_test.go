package follower

import (
	"testing"
	"time"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/reconcile"
)

// TestMeasureQuality: the three latency parts add up to the whole (event server time to
// execution), and slippage is measured only for an open copied from the master's open,
// worse positive on either side.
func TestMeasureQuality(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	o := &Origin{ServerTime: t0, Received: t0.Add(3 * time.Millisecond), Kind: broker.Opened,
		Master: broker.Position{Symbol: "EURUSD", Side: broker.Buy, OpenPrice: 1.08500}}
	sent := t0.Add(5 * time.Millisecond)
	res := broker.OrderResult{Price: 1.08520, ServerTime: t0.Add(12 * time.Millisecond)}
	point := func(p float64) func(string) float64 { return func(string) float64 { return p } }
	q := MeasureQuality(o, reconcile.Action{Kind: reconcile.Open, Side: broker.Buy}, res, sent, point(0.00001))
	if q.Feed != 3*time.Millisecond || q.Node != 2*time.Millisecond || q.Broker != 7*time.Millisecond {
		t.Fatalf("parts %v %v %v", q.Feed, q.Node, q.Broker)
	}
	if q.Feed+q.Node+q.Broker != res.ServerTime.Sub(o.ServerTime) {
		t.Fatal("the parts do not add up to the copy latency")
	}
	if !q.HasSlippage || q.Slippage < 19.999 || q.Slippage > 20.001 {
		t.Fatalf("buy filled 2 pips above the master: slippage %v (%v)", q.Slippage, q.HasSlippage)
	}
	// A reversed copy sells: receiving more than the master paid is better (negative).
	q = MeasureQuality(o, reconcile.Action{Kind: reconcile.Open, Side: broker.Sell}, res, sent, point(0.00001))
	if q.Slippage > -19.999 || q.Slippage < -20.001 {
		t.Fatalf("sell filled 2 pips above: slippage %v", q.Slippage)
	}
	for name, c := range map[string]struct {
		act   reconcile.Action
		kind  broker.EventKind
		point float64
	}{
		"a close":          {reconcile.Action{Kind: reconcile.Close, Side: broker.Buy}, broker.Opened, 0.00001},
		"a modify event":   {reconcile.Action{Kind: reconcile.Open, Side: broker.Buy}, broker.Modified, 0.00001},
		"an unknown point": {reconcile.Action{Kind: reconcile.Open, Side: broker.Buy}, broker.Opened, 0},
	} {
		oo := *o
		oo.Kind = c.kind
		if q := MeasureQuality(&oo, c.act, res, sent, point(c.point)); q.HasSlippage {
			t.Errorf("%s: slippage measured (%v)", name, q.Slippage)
		}
	}
}
