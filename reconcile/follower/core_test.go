package follower

import (
	"errors"
	"testing"
	"time"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/reconcile"
)

func ready(h *harness) {
	h.copying(config(1, ""), state("f", broker.Hedging), state("m", broker.Hedging))
}

// TestEventStream: where each master event falls in its feed's (epoch, seq) stream, and
// what the Core does with it: copy at once, ignore, or repair by reconciling.
func TestEventStream(t *testing.T) {
	for name, c := range map[string]struct {
		restart    bool  // the feed restarted first (its reconcile answered)
		epoch, seq int64 // the event's
		copyIt     bool
		cause      Cause // the reconcile it asks for, when it does not copy
	}{
		"the next event is copied":                   {epoch: 1, seq: 6, copyIt: true},
		"an event seen before is ignored":            {epoch: 1, seq: 5},
		"an event seen long before is ignored":       {epoch: 1, seq: 1},
		"a lost event is a gap":                      {epoch: 1, seq: 7, cause: CauseGap},
		"an event of another epoch is unknown":       {epoch: 2, seq: 6, cause: CauseEpoch},
		"a new epoch's first event after a restart":  {restart: true, epoch: 2, seq: 1, copyIt: true},
		"a new epoch's third event after a restart":  {restart: true, epoch: 2, seq: 3, cause: CauseGap},
		"the old epoch's next event after a restart": {restart: true, epoch: 1, seq: 6, cause: CauseGap},
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, Options{})
			ready(h)
			if c.restart {
				h.rd = h.c.MasterAttached(h.at(), 100, true, 0, 0, ServerClock{})
				h.wantReconcile(CauseRestart)
				h.answer(state("f", broker.Hedging), state("m", broker.Hedging), nil)
			}
			h.event(broker.Opened, c.epoch, c.seq, h.mpos(500))
			switch {
			case c.copyIt:
				a := h.wantSend(reconcile.Open)
				if a.MasterTicket != 500 || h.rd.Send.Origin == nil || h.rd.Send.Link != 1 {
					t.Fatalf("order %+v (origin %v, link %d), want a copy of master ticket 500 on link 1 measured from its event", a, h.rd.Send.Origin, h.rd.Send.Link)
				}
			case c.cause != CauseNone:
				h.wantReconcile(c.cause)
			default:
				h.wantNothing("a duplicate")
			}
		})
	}
}

// TestCopyOnTheEventPath: an in-order event is planned, sent, journalled with its quality,
// tracked in the ticket map and written; the copy's close follows the master's close.
func TestCopyOnTheEventPath(t *testing.T) {
	h := newHarness(t, Options{})
	ready(h)
	h.event(broker.Opened, 1, 6, h.mpos(500))
	h.wantSend(reconcile.Open)
	h.filled(9001)
	if len(h.rd.Journal) != 1 || h.rd.Journal[0].Result != "ok" || !h.rd.Journal[0].HasQuality || h.rd.Journal[0].Link != 1 {
		t.Fatalf("journal %+v, want one ok entry of link 1 with its quality", h.rd.Journal)
	}
	if len(h.rd.Tickets) != 1 || h.rd.Tickets[0].Entry.FollowerTicket != 9001 || !h.rd.Tickets[0].ClosedAt.IsZero() {
		t.Fatalf("tickets %+v, want 500 → 9001 tracked", h.rd.Tickets)
	}
	if !h.rd.WriteStatus || h.rd.Send != nil {
		t.Fatalf("after the only order: write status %v, send %v", h.rd.WriteStatus, h.rd.Send)
	}
	if ps, _, _ := h.c.Positions(); len(ps) != 1 || ps[0].Ticket != 9001 {
		t.Fatalf("follower positions %+v, want the copy", ps)
	}
	h.event(broker.Closed, 1, 7, h.mpos(500))
	a := h.wantSend(reconcile.Close)
	if a.FollowerTicket != 9001 {
		t.Fatalf("closes %d, want the copy 9001", a.FollowerTicket)
	}
	h.filled(9001)
	if len(h.rd.Tickets) != 1 || h.rd.Tickets[0].ClosedAt.IsZero() {
		t.Fatalf("tickets %+v, want 500 → 9001 closed", h.rd.Tickets)
	}
	if ps, _, _ := h.c.Positions(); len(ps) != 0 {
		t.Fatalf("follower positions %+v after the close, want none", ps)
	}
}

// TestReconcileChaining: what arrives during a reconcile runs another right after it,
// counted under the first cause that arrived (an event alone: "again"); a tick during
// one starts nothing.
func TestReconcileChaining(t *testing.T) {
	for name, c := range map[string]struct {
		during func(h *harness)
		want   Cause
	}{
		"an in-order event": {func(h *harness) { h.event(broker.Opened, 1, 9, h.mpos(500)) }, CauseAgain},
		"a gap":             {func(h *harness) { h.event(broker.Opened, 1, 11, h.mpos(500)) }, CauseGap},
		"a feed restart":    {func(h *harness) { h.rd = h.c.MasterAttached(h.at(), 100, true, 0, 0, ServerClock{}) }, CauseRestart},
		"a gap, then an in-order event": {func(h *harness) {
			h.event(broker.Opened, 1, 11, h.mpos(500))
			h.event(broker.Opened, 1, 12, h.mpos(501))
		}, CauseGap},
		"a configuration reload": {func(h *harness) {
			h.rd = h.c.ConfigChanged(2)
			h.rd = h.c.Loaded(h.at(), Loaded{Config: config(2, "")})
		}, CauseConfig},
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, Options{})
			ready(h)
			h.event(broker.Opened, 1, 8, h.mpos(400)) // a gap: reconcile
			h.wantReconcile(CauseGap)
			c.during(h)
			if h.rd.Reconcile != nil || h.rd.Send != nil {
				t.Fatalf("a second reconcile or an order during one: %+v", h.rd)
			}
			h.rd = h.c.Tick(h.at())
			h.wantNothing("a tick during a reconcile")
			h.answer(state("f", broker.Hedging), state("m", broker.Hedging), nil)
			if n := hasNote(h.rd, NoteReconcileDone); n == nil || n.Idle {
				t.Fatalf("reconcile done note %+v, want one that is not idle", n)
			}
			h.wantReconcile(c.want)
			h.answer(state("f", broker.Hedging), state("m", broker.Hedging), nil)
			if n := hasNote(h.rd, NoteReconcileDone); n == nil || !n.Idle || h.rd.Reconcile != nil {
				t.Fatalf("after the chained reconcile: note %+v, reconcile %+v; want idle", n, h.rd.Reconcile)
			}
		})
	}
}

// TestUnknownOutcome: an order whose outcome is unknown is never resent blindly; the rest
// of the plan waits, and a reconcile runs first, as soon as the message is done.
func TestUnknownOutcome(t *testing.T) {
	h := newHarness(t, Options{})
	ready(h)
	plan := opens(1, 2)
	h.event(broker.Opened, 1, 9, h.mpos(400))
	h.wantReconcile(CauseGap)
	h.answer(state("f", broker.Hedging), state("m", broker.Hedging), map[int64]reconcile.Result{1: plan})
	h.wantSend(reconcile.Open)
	h.failed(broker.NewError(broker.ErrUnknownOutcome, broker.CodeTimeout, "timeout"))
	if h.rd.Send != nil {
		t.Fatalf("the next order was sent after an unknown outcome: %+v", h.rd.Send)
	}
	if !h.rd.Repair || h.rd.RepairIn != 0 {
		t.Fatalf("repair %v in %v, want at once", h.rd.Repair, h.rd.RepairIn)
	}
	if len(h.rd.Journal) != 1 || h.rd.Journal[0].Result != broker.ClassName(broker.ErrUnknownOutcome) {
		t.Fatalf("journal %+v", h.rd.Journal)
	}
	h.rd = h.c.Tick(h.at()) // whichever comes first, the tick or RepairDue, counts it
	h.wantReconcile(CauseUnknown)
	h.rd = h.c.RepairDue(h.at())
	h.wantNothing("RepairDue after its reconcile started")
}

// TestOrderErrors: the broker-error policy, per class: whether the plan goes on, whether a
// repair is asked for and when, and whether the account is lost.
func TestOrderErrors(t *testing.T) {
	for name, c := range map[string]struct {
		err      error
		goesOn   bool
		repairIn time.Duration // -1: no repair asked
		fence    bool
	}{
		"permanent":     {broker.NewError(broker.ErrPermanent, broker.CodeInvalidRequest, "no"), true, -1, false},
		"retryable":     {broker.NewError(broker.ErrRetryable, broker.CodeRequote, "requote"), true, -1, false},
		"fenced":        {broker.NewError(broker.ErrFenced, broker.CodeFencedToken, "stale"), false, -1, true},
		"expired":       {broker.NewError(broker.ErrExpired, broker.CodeExpired, "late"), false, -1, false},
		"market closed": {broker.NewError(broker.ErrMarketClosed, broker.CodeMarketClosed, "closed"), false, 5 * time.Second, false},
		"disconnected":  {errors.New("connection reset"), false, 250 * time.Millisecond, false},
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, Options{})
			ready(h)
			plan := opens(1, 2)
			h.event(broker.Opened, 1, 9, h.mpos(400))
			h.answer(state("f", broker.Hedging), state("m", broker.Hedging), map[int64]reconcile.Result{1: plan})
			h.wantSend(reconcile.Open)
			h.failed(c.err)
			for h.rd.ResendIn > 0 { // refused for now: sent again (TestResend)
				h.rd = h.c.ResendDue(h.at())
				h.wantSend(reconcile.Open)
				h.failed(c.err)
			}
			if got := h.rd.Send != nil; got != c.goesOn {
				t.Fatalf("plan goes on: %v, want %v", got, c.goesOn)
			}
			if h.rd.Fence != c.fence {
				t.Fatalf("fence %v, want %v", h.rd.Fence, c.fence)
			}
			if c.repairIn < 0 && h.rd.Repair || c.repairIn >= 0 && (!h.rd.Repair || h.rd.RepairIn != c.repairIn) {
				t.Fatalf("repair %v in %v, want %v", h.rd.Repair, h.rd.RepairIn, c.repairIn)
			}
			if n := hasNote(h.rd, NoteOrderFailed); n == nil || n.Action.MasterTicket != 1 {
				t.Fatalf("no note of the failed order: %+v", h.rd.Notes)
			}
		})
	}
}

// TestResend: an order refused for now is sent again after growing pauses, MaxAttempts
// in all, journalled once with its last outcome; the run waits meanwhile, and an event
// that arrives is neither copied beside it nor lost: a reconcile follows the run.
func TestResend(t *testing.T) {
	h := newHarness(t, Options{})
	ready(h)
	requote := broker.NewError(broker.ErrRetryable, broker.CodeRequote, "requote")
	h.event(broker.Opened, 1, 6, h.mpos(500))
	for _, pause := range []time.Duration{50 * time.Millisecond, 100 * time.Millisecond} {
		h.wantSend(reconcile.Open)
		h.failed(requote)
		if h.rd.ResendIn != pause || h.rd.Send != nil || len(h.rd.Journal) != 0 || hasNote(h.rd, NoteOrderRetry) == nil {
			t.Fatalf("a requote: %+v, want a resend in %v, nothing journalled yet", h.rd, pause)
		}
		h.event(broker.Opened, 1, h.c.master(100).seq+1, h.mpos(600))
		h.wantNothing("an event while an order waits for its resend")
		h.rd = h.c.Tick(h.at())
		h.wantNothing("a tick while an order waits for its resend")
		h.rd = h.c.ResendDue(h.at())
	}
	h.wantSend(reconcile.Open)
	h.failed(requote)
	if h.rd.ResendIn != 0 || len(h.rd.Journal) != 1 || h.rd.Journal[0].Result != "retryable" {
		t.Fatalf("after %d attempts: %+v, want the failure journalled and no resend", MaxAttempts, h.rd)
	}
	h.wantReconcile(CauseGap) // the events that came meanwhile
	h.rd = h.c.ResendDue(h.at())
	h.wantNothing("a stale ResendDue")
}

// TestRepairBackoff: orders failing in a row push the repair further out; one that
// executes starts over.
func TestRepairBackoff(t *testing.T) {
	h := newHarness(t, Options{})
	ready(h)
	closed := broker.NewError(broker.ErrMarketClosed, broker.CodeMarketClosed, "closed")
	seq := int64(5)
	for _, want := range []time.Duration{5 * time.Second, 10 * time.Second, 20 * time.Second} {
		seq++
		h.event(broker.Opened, 1, seq, h.mpos(400+seq)) // dirty: the event asks a reconcile
		if h.rd.Reconcile == nil {
			h.rd = h.c.RepairDue(h.at())
		}
		plan := opens(seq)
		h.answer(state("f", broker.Hedging), state("m", broker.Hedging), map[int64]reconcile.Result{1: plan})
		h.failed(closed)
		if h.rd.RepairIn != want {
			t.Fatalf("repair in %v, want %v", h.rd.RepairIn, want)
		}
	}
	h.rd = h.c.RepairDue(h.at())
	plan := opens(99)
	h.answer(state("f", broker.Hedging), state("m", broker.Hedging), map[int64]reconcile.Result{1: plan})
	h.filled(7)
	h.event(broker.Opened, 1, 99, h.mpos(98)) // an unknown-to-the-stream event: reconcile
	plan.Actions[0].MasterTicket = 98
	h.answer(state("f", broker.Hedging), state("m", broker.Hedging), map[int64]reconcile.Result{1: plan})
	h.failed(closed)
	if h.rd.RepairIn != 5*time.Second {
		t.Fatalf("repair in %v after a success, want 5s again", h.rd.RepairIn)
	}
}

// TestLostGate: an order the gate refuses is dropped, journalled, and nothing after it is
// sent; no reconcile runs while the lease is not held, and the first tick after a renewal
// repairs.
func TestLostGate(t *testing.T) {
	h := newHarness(t, Options{})
	ready(h)
	h.event(broker.Opened, 1, 6, h.mpos(500))
	h.wantSend(reconcile.Open)
	h.lease = false
	h.rd = h.c.OrderDone(h.at(), OrderOutcome{Dropped: true})
	if h.rd.Send != nil || len(h.rd.Journal) != 1 || h.rd.Journal[0].Result != "dropped" || h.c.Status().Dropped != 1 || h.c.Status().Phase != PhaseDirty {
		t.Fatalf("after a dropped order: send %v, journal %+v, status %+v", h.rd.Send, h.rd.Journal, h.c.Status())
	}
	h.event(broker.Opened, 1, 7, h.mpos(501))
	h.wantNothing("an event while the lease is not held")
	h.rd = h.c.Tick(h.at())
	h.wantNothing("a tick while the lease is not held")
	h.lease = true
	h.rd = h.c.Tick(h.at())
	h.wantReconcile(CauseGate)
}

// TestToken: a new owner raises its token before its first reconcile; a stale token loses
// the account (the gate is fenced); a server that cannot raise one ahead of an order goes
// on; a dropped or failed raise retries at the next tick.
func TestToken(t *testing.T) {
	start := func(t *testing.T) *harness {
		h := newHarness(t, Options{})
		h.rd = h.c.Start(Status{})
		h.rd = h.c.Loaded(h.at(), Loaded{Config: config(1, ""), WithTickets: true})
		h.rd = h.c.MasterAttached(h.at(), 100, false, 1, 5, ServerClock{})
		if !h.rd.RaiseToken || h.rd.Reconcile != nil {
			t.Fatalf("want the token raised before the reconcile, got %+v", h.rd)
		}
		return h
	}
	t.Run("stale", func(t *testing.T) {
		h := start(t)
		h.rd = h.c.TokenDone(h.tick(), broker.NewError(broker.ErrFenced, broker.CodeFencedToken, "stale"), false)
		if !h.rd.Fence || h.rd.Reconcile != nil {
			t.Fatalf("a stale token: fence %v, reconcile %v", h.rd.Fence, h.rd.Reconcile)
		}
	})
	t.Run("not supported", func(t *testing.T) {
		h := start(t)
		h.rd = h.c.TokenDone(h.tick(), broker.NewError(broker.ErrPermanent, broker.CodeInvalidRequest, "old server"), false)
		h.wantReconcile(CauseStart)
	})
	t.Run("dropped, then raised", func(t *testing.T) {
		h := start(t)
		h.rd = h.c.TokenDone(h.tick(), nil, true)
		h.wantNothing("a dropped raise")
		h.rd = h.c.Tick(h.at())
		if !h.rd.RaiseToken {
			t.Fatal("the tick did not raise the token again")
		}
		h.rd = h.c.TokenDone(h.tick(), nil, false)
		h.wantReconcile(CauseGate)
		h.answer(state("f", broker.Hedging), state("m", broker.Hedging), nil)
		h.rd = h.c.MasterAttached(h.at(), 100, true, 0, 0, ServerClock{})
		h.wantReconcile(CauseRestart) // raised once per ownership
	})
}

// TestConfigChange: a reload keeps the Core's own ticket map (ahead of the database),
// reconnects nothing, and reconciles under "config"; the same version changes nothing.
func TestConfigChange(t *testing.T) {
	h := newHarness(t, Options{})
	ready(h)
	h.event(broker.Opened, 1, 6, h.mpos(500))
	h.filled(9001)
	h.rd = h.c.ConfigChanged(1)
	h.wantNothing("the same version")
	h.rd = h.c.ConfigChanged(2)
	if h.rd.Load == nil || h.rd.Load.Tickets || h.rd.Load.Connect {
		t.Fatalf("reload %+v, want the configuration only", h.rd.Load)
	}
	h.rd = h.c.Loaded(h.at(), Loaded{Config: config(2, `{"sizing":{"mode":"lot_multiplier","multiplier":2}}`)})
	ask := h.wantReconcile(CauseConfig)
	if len(ask.Links) != 1 || len(ask.Links[0].TicketMap) != 1 || ask.Links[0].TicketMap[0].FollowerTicket != 9001 {
		t.Fatalf("ask %+v: want link 1 with its copy 500 → 9001", ask.Links)
	}
	if ask.Links[0].Link.Settings.Sizing.Multiplier != 2 {
		t.Fatalf("the reload's settings are not used: %+v", ask.Links[0].Link.Settings.Sizing)
	}
}

// TestBadLinkIsLeftOut: a link whose settings do not validate copies nothing and says why;
// the others copy on.
func TestBadLinkIsLeftOut(t *testing.T) {
	h := newHarness(t, Options{})
	cfg := config(1, "")
	cfg.Links = append(cfg.Links, LinkConfig{ID: 2, MasterID: 200, Magic: 1002, Settings: []byte(`{"sizing":{"multiplier":-1}}`), MasterEnabled: true},
		LinkConfig{ID: 3, MasterID: 300, Magic: 1003, Settings: []byte(`{}`)})
	h.rd = h.c.Start(Status{})
	h.rd = h.c.Loaded(h.at(), Loaded{Config: cfg, WithTickets: true})
	if n := hasNote(h.rd, NoteBadConfig); n == nil || n.Link != 2 || h.c.Status().LastError == "" {
		t.Fatalf("bad link note %+v, last error %q", n, h.c.Status().LastError)
	}
	if !h.rd.MastersChanged || len(h.rd.Masters) != 1 || h.rd.Masters[0] != 100 {
		t.Fatalf("masters %v, want only 100 (link 2 invalid, link 3's master switched off)", h.rd.Masters)
	}
}

// TestPeriodicRepair: once ReconcileEvery has passed since an idle account's last
// reconcile, measured on the clock of its inputs, it asks (once) for a turn; its turn
// starts the repair. A turn that comes when the repair is no longer due passes.
func TestPeriodicRepair(t *testing.T) {
	h := newHarness(t, Options{ReconcileEvery: time.Minute})
	ready(h)
	h.rd = h.c.Tick(h.at())
	if h.rd.WantRepair {
		t.Fatal("a turn asked before the period")
	}
	h.now = h.now.Add(time.Minute)
	h.periodic()
	h.rd = h.c.Tick(h.at())
	if h.rd.WantRepair {
		t.Fatal("a turn asked while the repair runs")
	}

	// Asked, then a gap's reconcile runs first: the turn passes.
	h.answer(state("f", broker.Hedging), state("m", broker.Hedging), nil)
	h.now = h.now.Add(time.Minute)
	h.rd = h.c.Tick(h.at())
	if !h.rd.WantRepair {
		t.Fatal("no turn asked a period after the last repair")
	}
	h.rd = h.c.Tick(h.at())
	if h.rd.WantRepair {
		t.Fatal("a turn asked twice")
	}
	h.now = h.now.Add(time.Minute)
	if h.rd = h.c.Tick(h.at()); !h.rd.WantRepair {
		t.Fatal("a turn not given within a period was not asked again")
	}
	h.event(broker.Opened, 1, 9, h.mpos(500))
	h.wantReconcile(CauseGap)
	h.answer(state("f", broker.Hedging), state("m", broker.Hedging), nil)
	h.rd = h.c.RepairTurn(h.at())
	h.wantNothing("a turn after another reconcile repaired the account")
}

// periodic asks for a turn at a tick and takes it: the periodic repair starts.
func (h *harness) periodic() {
	h.t.Helper()
	h.rd = h.c.Tick(h.at())
	if !h.rd.WantRepair || h.rd.Reconcile != nil {
		h.t.Fatalf("periodic repair due: %+v, want a turn asked and no reconcile yet", h.rd)
	}
	h.rd = h.c.RepairTurn(h.at())
	h.wantReconcile(CausePeriodic)
}

// TestPeriodicRepairSpread: the first periodic repair after a claim comes at the
// account's own offset, the later ones a whole period after the last reconcile; accounts
// claimed together thus repair spread over the period, not in one burst.
func TestPeriodicRepairSpread(t *testing.T) {
	h := newHarness(t, Options{ReconcileEvery: time.Minute, ReconcileOffset: 20 * time.Second})
	ready(h)
	h.now = h.now.Add(19 * time.Second)
	if h.rd = h.c.Tick(h.at()); h.rd.WantRepair {
		t.Fatal("a turn asked before the offset")
	}
	h.now = h.now.Add(time.Second)
	h.periodic()
	h.answer(state("f", broker.Hedging), state("m", broker.Hedging), nil)
	h.now = h.now.Add(59 * time.Second)
	if h.rd = h.c.Tick(h.at()); h.rd.WantRepair {
		t.Fatal("the second repair asked before a whole period")
	}
	h.now = h.now.Add(time.Second)
	h.periodic()

	// An offset outside (0, period) is the period.
	h = newHarness(t, Options{ReconcileEvery: time.Minute, ReconcileOffset: 2 * time.Minute})
	ready(h)
	h.now = h.now.Add(time.Minute)
	h.periodic()
}

// TestEventDuringABackgroundRepairExpedites: an event that arrives while a periodic
// repair waits asks once that the repair be expedited (it now holds up a copy); the
// reconcile that follows copies it, counted as "again". A reconcile asked for any other
// cause is already in the front lane: nothing to expedite.
func TestEventDuringABackgroundRepairExpedites(t *testing.T) {
	h := newHarness(t, Options{ReconcileEvery: time.Minute})
	ready(h)
	h.now = h.now.Add(time.Minute)
	h.periodic()
	if h.rd.Expedite {
		t.Fatal("a periodic repair expedited before anything waits for it")
	}
	h.event(broker.Opened, 1, 6, h.mpos(500))
	if !h.rd.Expedite || h.rd.Send != nil || h.rd.Reconcile != nil {
		t.Fatalf("event during a periodic repair: %+v, want only Expedite", h.rd)
	}
	h.event(broker.Modified, 1, 7, h.mpos(500))
	if h.rd.Expedite {
		t.Fatal("expedited twice for one reconcile")
	}
	h.answer(state("f", broker.Hedging), state("m", broker.Hedging), nil)
	h.wantReconcile(CauseAgain)

	// A gap's reconcile is not a background one.
	h.event(broker.Opened, 1, 9, h.mpos(501))
	if h.rd.Expedite {
		t.Fatal("expedited a reconcile of the front lane")
	}
}

// TestNettingReadsPositionsBack: on a netting follower, orders are followed by a read of
// its positions, which replaces the cached ones.
func TestNettingReadsPositionsBack(t *testing.T) {
	h := newHarness(t, Options{})
	h.copying(config(1, ""), state("f", broker.Netting), state("m", broker.Hedging))
	h.event(broker.Opened, 1, 6, h.mpos(500))
	h.wantSend(reconcile.Open)
	h.filled(77)
	if !h.rd.ReadPositions {
		t.Fatalf("no positions read after an order on a netting follower: %+v", h.rd)
	}
	net := broker.Position{Ticket: 77, Symbol: "EURUSD", Side: broker.Buy, Volume: 1}
	h.rd = h.c.PositionsRead(h.at(), []broker.Position{net}, nil)
	if ps, _, _ := h.c.Positions(); len(ps) != 1 || ps[0] != net {
		t.Fatalf("positions %+v, want the ones read back", ps)
	}
	if !h.rd.WriteStatus {
		t.Fatal("status not written after the event's orders")
	}
}

// TestLoadFailureBacksOff: a failed load is retried later and later.
func TestLoadFailureBacksOff(t *testing.T) {
	h := newHarness(t, Options{})
	h.rd = h.c.Start(Status{})
	var last time.Duration
	for i := 0; i < 3; i++ {
		h.rd = h.c.LoadFailed(errors.New("database away"))
		if h.rd.RetryLoadIn <= last || h.c.Status().Phase != PhaseFailed {
			t.Fatalf("retry in %v after %v, phase %v", h.rd.RetryLoadIn, last, h.c.Status().Phase)
		}
		last = h.rd.RetryLoadIn
		h.rd = h.c.RetryLoad()
		if h.rd.Load == nil || !h.rd.Load.Tickets {
			t.Fatalf("retry %+v, want a first load", h.rd.Load)
		}
	}
}
