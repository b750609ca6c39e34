package follower

import (
	"testing"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/reconcile"
)

// behind steps an event the account took up while more of its master's events waited.
func (h *harness) behind(kind broker.EventKind, epoch, seq int64, p broker.Position) {
	ev := &broker.Event{Kind: kind, Epoch: epoch, Seq: seq, Position: p, ServerTime: h.now}
	h.rd = h.c.EventBehind(h.at(), 100, ev, h.now)
}

// TestEventsBehindCoalesce: an account that has fallen behind plans its backlog once,
// from the latest master state: an open and its close that both waited send nothing, a
// position modified twice is opened once with its latest stops, and the held events are
// planned by the next in-order event (issue 31 item 3).
func TestEventsBehindCoalesce(t *testing.T) {
	h := newHarness(t, Options{})
	ready(h)
	a, b := h.mpos(500), h.mpos(501)
	h.behind(broker.Opened, 1, 6, a)
	if !h.rd.FlushEvents {
		t.Fatal("the first event held back did not ask for a flush")
	}
	h.wantNothing("an event held back")
	h.behind(broker.Opened, 1, 7, b)
	if h.rd.FlushEvents {
		t.Fatal("a second flush asked before the first came")
	}
	h.wantNothing("a second event held back")
	b.SL = 1.05
	h.behind(broker.Modified, 1, 8, b)
	h.wantNothing("a third event held back")
	h.event(broker.Closed, 1, 9, a) // in order, not behind: plans the backlog

	// 501 is opened once, with the stop of its last modification; 500 opened and closed
	// while the account was behind: nothing to send for it.
	open := h.wantSend(reconcile.Open)
	if open.MasterTicket != 501 || open.SL != 1.05 {
		t.Fatalf("backlog order %v, want the open of 501 with SL 1.05", open)
	}
	h.filled(9001)
	if h.rd.Send != nil {
		t.Fatalf("a second backlog order: %v", h.rd.Send.Action)
	}
	if len(h.rd.Journal) != 1 || !h.rd.Journal[0].HasQuality {
		t.Fatalf("journal %+v, want one ok entry with its quality", h.rd.Journal)
	}

	// A flush after the backlog was planned finds nothing left.
	h.rd = h.c.FlushEvents(h.at())
	h.wantNothing("a flush with nothing held")

	// Held events that only a flush plans: the last event of a backlog may itself be
	// taken up as behind (the feed had sent a later one that this account never gets).
	h.behind(broker.Closed, 1, 10, b)
	h.wantNothing("a close held back")
	h.rd = h.c.FlushEvents(h.at())
	if cl := h.wantSend(reconcile.Close); cl.FollowerTicket != 9001 {
		t.Fatalf("flush closes %d, want 9001", cl.FollowerTicket)
	}
	h.filled(9001)
}

// TestEventsBehindYieldToAReconcile: a reconcile reads the master afresh, so events held
// back when one starts are dropped, not planned again after it.
func TestEventsBehindYieldToAReconcile(t *testing.T) {
	h := newHarness(t, Options{})
	ready(h)
	h.behind(broker.Opened, 1, 6, h.mpos(500))
	h.behind(broker.Opened, 1, 8, h.mpos(501)) // seq 7 missing: a gap
	h.wantReconcile(CauseGap)
	h.answer(state("f", broker.Hedging), state("m", broker.Hedging, h.mpos(500), h.mpos(501)), map[int64]reconcile.Result{1: opens(500, 501)})
	h.wantSend(reconcile.Open)
	h.filled(9001)
	h.wantSend(reconcile.Open)
	h.filled(9002)
	h.rd = h.c.FlushEvents(h.at())
	h.wantNothing("a flush after the reconcile that covered the held events")
}
