package follower

import (
	"encoding/json"
	"strings"
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
	h.rd = h.c.MasterAttached(h.at(), 100, false, 1, 5, ServerClock{})
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
	h2.rd = h2.c.MasterAttached(h2.at(), 100, false, 1, 5, ServerClock{})
	h2.rd = h2.c.TokenDone(h2.tick(), nil, false)
	if got := h2.wantReconcile(CauseStart).Links[0].Link.Settings.Protect.CloseOnly; got != protect.CloseNow {
		t.Fatalf("a new owner's link mode %q, want close_now: the stop-out was forgotten", got)
	}
}

// TestStopOutWhileReconcilingPrioritizes: a stop-out that comes while a reconcile is in
// flight asks, once, that it start ahead of every other (its plan will be discarded and
// the protection reconcile that closes the copies follows it); nothing else asks that.
func TestStopOutWhileReconcilingPrioritizes(t *testing.T) {
	h := newHarness(t, Options{})
	h.rd = h.c.Start(Status{})
	h.rd = h.c.Loaded(h.at(), Loaded{Config: config(1, ""), Protection: Protection{Limits: []byte(`{"max_drawdown":{"percent":10}}`)}, WithTickets: true})
	h.rd = h.c.MasterAttached(h.at(), 100, false, 1, 5, ServerClock{})
	h.rd = h.c.TokenDone(h.tick(), nil, false)
	if h.rd.Prioritize {
		t.Fatal("the first reconcile asked to be prioritized")
	}
	h.wantReconcile(CauseStart)
	h.answer(state("f", broker.Hedging), state("m", broker.Hedging), nil) // equity 10,000

	h.event(broker.Opened, 1, 9, h.mpos(400)) // a gap: a reconcile, in flight from here
	h.wantReconcile(CauseGap)
	h.event(broker.Opened, 1, 10, h.mpos(401))
	if h.rd.Prioritize {
		t.Fatal("an event during the reconcile asked to prioritize it")
	}
	h.rd = h.c.EquityRead(h.at(), broker.AccountInfo{Login: "f", Balance: 10_000, Equity: 8_000, Mode: broker.Hedging})
	if h.c.Status().StopOut == "" || !h.rd.Prioritize {
		t.Fatalf("stop-out %q during a reconcile: Prioritize %v, want true", h.c.Status().StopOut, h.rd.Prioritize)
	}
	h.rd = h.c.EquityRead(h.at(), broker.AccountInfo{Login: "f", Balance: 10_000, Equity: 7_000, Mode: broker.Hedging})
	if h.rd.Prioritize {
		t.Fatal("asked to prioritize the same reconcile twice")
	}
	losing := state("f", broker.Hedging)
	losing.Info.Equity = 7_000
	h.answer(losing, state("m", broker.Hedging), map[int64]reconcile.Result{1: opens(400)})
	if h.rd.Send != nil {
		t.Fatalf("the plan made before the stop-out was carried out: %+v", h.rd.Send.Action)
	}
	h.wantReconcile(CauseProtection)
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

// TestUnknownEquityHoldsNewCopies: a follower whose trade server does not say its equity
// (broker.AccountInfo.EquityUnknown) and that has a limit needing it opens no new copies
// while closes still flow, and its status says why; the unknown equity is never measured
// (no stop-out, no state written). A known reading lifts the hold.
func TestUnknownEquityHoldsNewCopies(t *testing.T) {
	limits := []byte(`{"max_drawdown":{"percent":10}}`)
	h := newHarness(t, Options{})
	h.rd = h.c.Start(Status{})
	h.rd = h.c.Loaded(h.at(), Loaded{Config: config(1, ""), Protection: Protection{Limits: limits}, WithTickets: true})
	h.rd = h.c.MasterAttached(h.at(), 100, false, 1, 5, ServerClock{})
	h.rd = h.c.TokenDone(h.tick(), nil, false)
	h.wantReconcile(CauseStart)
	h.answer(state("f", broker.Hedging), state("m", broker.Hedging), nil) // equity 10,000
	h.event(broker.Opened, 1, 6, h.mpos(500))
	h.wantSend(reconcile.Open)
	h.filled(9001)

	unknown := broker.AccountInfo{Login: "f", Mode: broker.Hedging, EquityUnknown: true}
	h.rd = h.c.EquityRead(h.at(), unknown)
	st := h.c.Status()
	if !st.EquityUnknown || st.Equity != 0 || st.Balance != 0 || !strings.Contains(st.StopOut, "equity unknown") ||
		!strings.Contains(st.StopOut, "cannot be evaluated") {
		t.Fatalf("status %+v: want equity unknown and the protection that cannot be evaluated", st)
	}
	if len(h.rd.Protection) != 0 || len(h.rd.Journal) != 0 || hasNote(h.rd, NoteStopOut) != nil {
		t.Fatalf("an unknown equity was measured: protection %+v, journal %+v", h.rd.Protection, h.rd.Journal)
	}
	if got := h.wantReconcile(CauseProtection).Links[0].Link.Settings.Protect.CloseOnly; got != protect.LetClose {
		t.Fatalf("link mode %q while the limit cannot be evaluated, want let_close (no new copies)", got)
	}
	ps, _, _ := h.c.Positions()
	f := state("f", broker.Hedging, ps...)
	f.Info = unknown
	h.answer(f, state("m", broker.Hedging, h.mpos(500)), nil)

	h.event(broker.Opened, 1, 7, h.mpos(501))
	if h.rd.Send != nil {
		t.Fatalf("a new copy was opened while the equity protection cannot be evaluated: %+v", h.rd.Send.Action)
	}
	h.event(broker.Closed, 1, 8, h.mpos(500))
	if a := h.wantSend(reconcile.Close); a.FollowerTicket != 9001 {
		t.Fatalf("closes %d, want the copy 9001: closes must flow", a.FollowerTicket)
	}
	h.filled(9001)

	h.rd = h.c.EquityRead(h.at(), broker.AccountInfo{Login: "f", Balance: 10_000, Equity: 9_500, Mode: broker.Hedging})
	if st := h.c.Status(); st.EquityUnknown || st.StopOut != "" || st.Equity != 9_500 {
		t.Fatalf("status %+v after a known reading, want copying", st)
	}
	if got := h.wantReconcile(CauseProtection).Links[0].Link.Settings.Protect.CloseOnly; got != protect.CopyNormally {
		t.Fatalf("link mode %q after a known reading, want copy normally", got)
	}
}

// TestUnknownEquityKeepsAStopOut: an unknown reading neither lifts a stop-out in force
// nor softens it (close_now stays), and a follower without limits copies as usual.
func TestUnknownEquityKeepsAStopOut(t *testing.T) {
	h := newHarness(t, Options{})
	h.rd = h.c.Start(Status{})
	h.rd = h.c.Loaded(h.at(), Loaded{Config: config(1, ""), Protection: Protection{Limits: []byte(`{"max_drawdown":{"percent":10}}`)}, WithTickets: true})
	h.rd = h.c.EquityRead(h.at(), broker.AccountInfo{Balance: 10_000, Equity: 10_000})
	h.rd = h.c.EquityRead(h.at(), broker.AccountInfo{Balance: 10_000, Equity: 8_000})
	stop := h.c.Status().StopOut
	if !strings.Contains(stop, "stopped out") {
		t.Fatalf("not stopped out at 20 %% down: %q", stop)
	}
	h.rd = h.c.EquityRead(h.at(), broker.AccountInfo{EquityUnknown: true})
	if got := h.c.Status().StopOut; got != stop || len(h.rd.Protection) != 0 {
		t.Fatalf("status %q (protection rows %+v) after an unknown reading, want the stop-out %q kept", got, h.rd.Protection, stop)
	}
	if got := h.c.links[0].link.Settings.Protect.CloseOnly; got != protect.CloseNow {
		t.Fatalf("link mode %q, want close_now kept", got)
	}

	free := newHarness(t, Options{})
	f := state("f", broker.Hedging)
	f.Info = broker.AccountInfo{Login: "f", Mode: broker.Hedging, EquityUnknown: true}
	free.copying(config(1, ""), f, state("m", broker.Hedging))
	if st := free.c.Status(); !st.EquityUnknown || st.StopOut != "" {
		t.Fatalf("status %+v of a follower without limits, want equity unknown and nothing held", st)
	}
	free.event(broker.Opened, 1, 6, free.mpos(500))
	free.wantSend(reconcile.Open)
}
