package follower

import (
	"testing"
	"time"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/reconcile"
)

// TestNextTickSaysWhenATickActs: NextTick, which the Supervisor uses to tick only the
// accounts a tick can do something for, agrees with Tick: nothing to do before the time it
// names (or while it names none), the periodic repair's turn asked at that time and asked
// again a period later, and a dirty account ticked at every cycle until the lease lets it
// reconcile; none while the reconcile runs.
func TestNextTickSaysWhenATickActs(t *testing.T) {
	const every = 10 * time.Second
	h := newHarness(t, Options{ReconcileEvery: every})
	ready(h)
	tickAt := func(at time.Time) {
		h.now = at.Add(-time.Millisecond)
		h.rd = h.c.Tick(h.at())
	}

	due, ok := h.c.NextTick()
	if !ok || due.IsZero() {
		t.Fatalf("an idle copying account: NextTick %v %v, want its periodic repair's time", due, ok)
	}
	tickAt(due.Add(-time.Millisecond))
	if h.rd.WantRepair || h.rd.Reconcile != nil {
		t.Fatalf("a tick before the repair is due asked for one: %+v", h.rd)
	}
	tickAt(due)
	if !h.rd.WantRepair {
		t.Fatalf("a tick at %v (NextTick) did not ask for the repair's turn: %+v", due, h.rd)
	}
	again, ok := h.c.NextTick()
	if !ok || again.Sub(due) != every {
		t.Fatalf("after the turn was asked: NextTick %v %v, want a period later (%v)", again, ok, due.Add(every))
	}
	tickAt(again.Add(-time.Millisecond))
	if h.rd.WantRepair {
		t.Fatal("the turn was asked again before a period passed")
	}
	tickAt(again)
	if !h.rd.WantRepair {
		t.Fatal("the turn was not asked again a period after the first")
	}

	// Dirty while the lease is not held: due at every tick, acted on once the lease is.
	h.event(broker.Opened, 1, 6, h.mpos(500))
	h.wantSend(reconcile.Open)
	h.lease = false
	h.rd = h.c.OrderDone(h.at(), OrderOutcome{Dropped: true})
	if at, ok := h.c.NextTick(); !ok || !at.IsZero() {
		t.Fatalf("a dirty account: NextTick %v %v, want every tick", at, ok)
	}
	h.rd = h.c.Tick(h.at())
	h.wantNothing("a tick while the lease is not held")
	h.lease = true
	h.rd = h.c.Tick(h.at())
	h.wantReconcile(CauseGate)
	if at, ok := h.c.NextTick(); ok {
		t.Fatalf("while its reconcile runs: NextTick %v, want none", at)
	}
}
