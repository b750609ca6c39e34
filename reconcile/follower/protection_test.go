package follower

import (
	"encoding/json"
	"testing"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/reconcile"
	"github.com/snapcopier/copier/reconcile/protect"
)

// TestStopOut: a reading below the follower's drawdown limit stops it out: the state is
// written, journalled and noted, every link turns close-now, and the plan the reconcile
// made before the breach is not carried out — another reconcile is asked for under
// "protection". A new owner adopts the stored stop-out.
func TestStopOut(t *testing.T) {
	limits := []byte(`{"max_drawdown":{"percent":10}}`)
	h := newHarness(t, Options{})
	h.rd = h.c.Start(Status{})
	h.rd = h.c.Loaded(h.at(), Loaded{Config: config(1, ""), Protection: Protection{Limits: limits}, WithTickets: true})
	if !h.rd.WatchEquity || !h.c.Guarded() {
		t.Fatal("a follower with limits is not watched")
	}
	h.rd = h.c.MasterAttached(h.at(), 100, false, 1, 5)
	h.rd = h.c.TokenDone(h.tick(), nil, false)
	h.wantReconcile(CauseStart)
	h.answer(state("f", broker.Hedging), state("m", broker.Hedging), nil) // equity 10,000: the high-water mark

	h.event(broker.Opened, 1, 9, h.mpos(400)) // a gap: a reconcile
	h.wantReconcile(CauseGap)
	losing := state("f", broker.Hedging)
	losing.Info.Equity = 8_000
	planned := opens(400)
	h.answer(losing, state("m", broker.Hedging), map[int64]reconcile.Result{1: planned})
	if h.rd.Send != nil {
		t.Fatalf("the plan made before the breach was carried out: %+v", h.rd.Send.Action)
	}
	if n := hasNote(h.rd, NoteStopOut); n == nil || n.Link != 0 || n.Stop.Reason != protect.ReasonDrawdown {
		t.Fatalf("stop-out note %+v", n)
	}
	if len(h.rd.Protection) != 1 || h.rd.Protection[0].Scope != 0 {
		t.Fatalf("protection rows %+v, want the follower's state", h.rd.Protection)
	}
	var st protect.State
	if err := json.Unmarshal(h.rd.Protection[0].State, &st); err != nil || st.Stop == nil {
		t.Fatalf("written state %s (%v): want the stop-out", h.rd.Protection[0].State, err)
	}
	if len(h.rd.Journal) != 1 || h.rd.Journal[0].Result != "stop_out" || h.c.Status().StopOut == "" {
		t.Fatalf("journal %+v, status %+v", h.rd.Journal, h.c.Status())
	}
	ask := h.wantReconcile(CauseProtection)
	if got := ask.Links[0].Link.Settings.Protect.CloseOnly; got != protect.CloseNow {
		t.Fatalf("link mode %q under a stop-out, want close_now", got)
	}

	// A new owner reads the stored state: still stopped out.
	h2 := newHarness(t, Options{})
	h2.rd = h2.c.Start(Status{})
	stored := Protection{Limits: limits, States: map[int64]ProtectionState{0: h.rd.Protection[0]}}
	stored.States[0] = ProtectionState{Scope: 0, State: append([]byte(nil), h.rd.Protection[0].State...)}
	h2.rd = h2.c.Loaded(h2.at(), Loaded{Config: config(1, ""), Protection: stored, WithTickets: true})
	h2.rd = h2.c.MasterAttached(h2.at(), 100, false, 1, 5)
	h2.rd = h2.c.TokenDone(h2.tick(), nil, false)
	if got := h2.wantReconcile(CauseStart).Links[0].Link.Settings.Protect.CloseOnly; got != protect.CloseNow {
		t.Fatalf("a new owner's link mode %q, want close_now: the stop-out was forgotten", got)
	}
}

// TestResetAdoptsTheStoredState: a reload that finds a newer operator-reset generation
// adopts the stored state; one with the same generation keeps the Core's own, which is
// ahead of the database.
func TestResetAdoptsTheStoredState(t *testing.T) {
	limits := []byte(`{"max_drawdown":{"percent":10}}`)
	h := newHarness(t, Options{})
	h.rd = h.c.Start(Status{})
	h.rd = h.c.Loaded(h.at(), Loaded{Config: config(1, ""), Protection: Protection{Limits: limits}, WithTickets: true})
	low := broker.AccountInfo{Balance: 10_000, Equity: 10_000}
	h.rd = h.c.EquityRead(h.at(), low)
	low.Equity = 8_000
	h.rd = h.c.EquityRead(h.at(), low)
	if h.c.Status().StopOut == "" {
		t.Fatal("not stopped out at 20 % down")
	}
	h.rd = h.c.ConfigChanged(2)
	h.rd = h.c.Loaded(h.at(), Loaded{Config: config(2, ""), Protection: Protection{Limits: limits}})
	if h.c.Status().StopOut == "" {
		t.Fatal("a reload without a reset ended the stop-out")
	}
	h.rd = h.c.ConfigChanged(3)
	reset := Protection{Limits: limits, States: map[int64]ProtectionState{0: {Scope: 0, State: []byte(`{}`), ResetGen: 1}}}
	h.rd = h.c.Loaded(h.at(), Loaded{Config: config(3, ""), Protection: reset})
	if h.c.Status().StopOut != "" {
		t.Fatalf("an operator reset was not adopted: %q", h.c.Status().StopOut)
	}
}
