package follower

import (
	"testing"
	"time"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/reconcile"
)

// TestLateCopyWithAStaleQuoteAsksForAReconcile: under a price-deviation bound, with the
// follower's quote read 10 s ago, a timely copy is sent (its master's price is the
// market's), and a copy 5 s late is not: the Core asks at once for a reconcile of cause
// CauseQuote, which reads a current quote and plans the copy against it.
func TestLateCopyWithAStaleQuoteAsksForAReconcile(t *testing.T) {
	h := newHarness(t, Options{})
	f := state("f", broker.Hedging)
	f.QuotesAt = h.now // read by the first reconcile
	h.copying(config(1, `{"window":{"max_age_seconds":60,"max_deviation_points":30}}`), f, state("m", broker.Hedging))
	h.now = h.now.Add(10 * time.Second)

	h.event(broker.Opened, 1, 6, h.mpos(400))
	h.wantSend(reconcile.Open)
	h.filled(9001)

	late := h.mpos(401)
	late.OpenTime = h.now.Add(-5 * time.Second)
	h.event(broker.Opened, 1, 7, late)
	if h.rd.Send != nil {
		t.Fatalf("a late copy was sent on a 10 s old quote: %+v", h.rd.Send.Action)
	}
	if !h.rd.Repair || h.rd.RepairIn != 0 {
		t.Fatalf("repair %v in %v, want one at once", h.rd.Repair, h.rd.RepairIn)
	}
	h.rd = h.c.RepairDue(h.at())
	h.wantReconcile(CauseQuote)
}
