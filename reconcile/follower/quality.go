package follower

import (
	"time"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/reconcile"
	"github.com/snapcopier/copier/reconcile/protect"
)

// Origin is the master event an order copies: its latency and slippage are measured
// against it.
type Origin struct {
	ServerTime time.Time // the master server's time of the event
	Received   time.Time // when the node's feed received it
	Kind       broker.EventKind
	Master     broker.Position
}

// Quality is one copied order's quality: the latency split in three and, for an open
// copied from the master's open, the slippage.
type Quality struct {
	// Feed is master server time → the node received the event (clocks of two machines:
	// skew shows here). Node is received → order sent. Broker is sent → executed by the
	// broker's clock (skew shows here too).
	Feed, Node, Broker time.Duration
	// Slippage is the follower's fill against the master's price in the follower symbol's
	// points, positive when worse (reconcile/protect.Slippage); valid when HasSlippage.
	Slippage    float64
	HasSlippage bool
}

// MeasureQuality is the quality of act, executed at result after being sent at sent, for
// the event origin o. point looks up a follower symbol's point (0: unknown, no
// slippage); it is called only when the slippage is measured (an open's).
func MeasureQuality(o *Origin, act reconcile.Action, result broker.OrderResult, sent time.Time, point func(symbol string) float64) Quality {
	q := Quality{Feed: o.Received.Sub(o.ServerTime), Node: sent.Sub(o.Received)}
	if !result.ServerTime.IsZero() {
		q.Broker = result.ServerTime.Sub(sent)
	}
	if act.Kind == reconcile.Open && o.Kind == broker.Opened && o.Master.OpenPrice > 0 && result.Price > 0 {
		if pt := point(act.Symbol); pt > 0 {
			q.Slippage = protect.Slippage(act.Side == broker.Buy, o.Master.OpenPrice, result.Price, pt)
			q.HasSlippage = true
		}
	}
	return q
}
