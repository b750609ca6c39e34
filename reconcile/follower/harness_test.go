package follower

import (
	"testing"
	"time"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/reconcile"
)

// t0 is the time the harness starts at; every input moves it on by a millisecond.
var t0 = time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)

// harness drives one Core the way the AccountActor does, with a lease switch and a clock.
type harness struct {
	t     testing.TB
	c     *Core
	lease bool
	now   time.Time
	rd    *Ready
}

func newHarness(t testing.TB, opt Options) *harness {
	return &harness{t: t, lease: true, now: t0, c: New(opt)}
}

func (h *harness) tick() time.Time { h.now = h.now.Add(time.Millisecond); return h.now }

// at is the next input's time, with the lease as the harness holds it.
func (h *harness) at() At { return At{Now: h.tick(), Lease: h.lease} }

func eurusd() broker.SymbolSpec {
	return broker.SymbolSpec{Name: "EURUSD", ContractSize: 100_000, MinLot: 0.01, MaxLot: 100, LotStep: 0.01,
		Digits: 5, Point: 0.00001, TradeAllowed: true, Bid: 1.10000, Ask: 1.10010}
}

func state(login string, mode broker.AccountMode, ps ...broker.Position) reconcile.AccountState {
	return reconcile.AccountState{Info: broker.AccountInfo{Login: login, Balance: 10_000, Equity: 10_000, Mode: mode},
		Positions: ps, Symbols: map[string]broker.SymbolSpec{"EURUSD": eurusd()}}
}

// config is link 1 (magic 1001) from master 100 with the given settings JSON ("" = {}).
func config(version int64, settings string) Config {
	if settings == "" {
		settings = "{}"
	}
	return Config{Version: version, Links: []LinkConfig{{ID: 1, MasterID: 100, Magic: 1001, Settings: []byte(settings), MasterEnabled: true}}}
}

// copying brings a fresh Core to copying: loaded (cfg), master 100 attached at epoch 1
// seq 5, the token raised, and a first reconcile answered with the given states and no plan.
func (h *harness) copying(cfg Config, follower reconcile.AccountState, master reconcile.AccountState) {
	h.t.Helper()
	h.rd = h.c.Start(Status{})
	if h.rd.Load == nil || !h.rd.Load.Tickets || !h.rd.Load.Connect {
		h.t.Fatalf("Start: want a first load with tickets and a connect, got %+v", h.rd.Load)
	}
	h.rd = h.c.Loaded(h.at(), Loaded{Config: cfg, WithTickets: true})
	if h.rd.Reconcile != nil || h.rd.RaiseToken {
		h.t.Fatal("reconciled before its master's feed attached")
	}
	h.rd = h.c.MasterAttached(h.at(), 100, false, 1, 5, ServerClock{})
	if !h.rd.RaiseToken {
		h.t.Fatalf("the first reconcile of an ownership did not raise the token first: %+v", h.rd)
	}
	h.rd = h.c.TokenDone(h.tick(), nil, false)
	h.wantReconcile(CauseStart)
	h.answer(follower, master, nil)
	if h.c.Status().Phase != PhaseCopying {
		h.t.Fatalf("phase %v after the first reconcile, want copying", h.c.Status().Phase)
	}
}

func (h *harness) answer(follower, master reconcile.AccountState, plans map[int64]reconcile.Result) {
	h.rd = h.c.Reconciled(h.at(), &Reconciled{Follower: follower, Masters: map[int64]reconcile.AccountState{100: master}, Plans: plans})
}

func (h *harness) wantReconcile(cause Cause) *Ask {
	h.t.Helper()
	if h.rd.Reconcile == nil {
		h.t.Fatalf("want a reconcile for %v, got none (%+v)", cause, h.rd)
	}
	if h.rd.Reconcile.Cause != cause {
		h.t.Fatalf("reconcile for %v, want %v", h.rd.Reconcile.Cause, cause)
	}
	return h.rd.Reconcile
}

func (h *harness) wantNothing(what string) {
	h.t.Helper()
	if h.rd.Send != nil || h.rd.Reconcile != nil || h.rd.RaiseToken || h.rd.Load != nil {
		h.t.Fatalf("%s: want nothing asked, got send=%v reconcile=%v token=%v load=%v", what, h.rd.Send, h.rd.Reconcile, h.rd.RaiseToken, h.rd.Load)
	}
}

func (h *harness) wantSend(kind reconcile.ActionKind) reconcile.Action {
	h.t.Helper()
	if h.rd.Send == nil {
		h.t.Fatalf("want an order (%v), got none: %+v", kind, h.rd)
	}
	if h.rd.Send.Action.Kind != kind {
		h.t.Fatalf("order %v, want %v", h.rd.Send.Action, kind)
	}
	return h.rd.Send.Action
}

func (h *harness) event(kind broker.EventKind, epoch, seq int64, p broker.Position) {
	ev := &broker.Event{Kind: kind, Epoch: epoch, Seq: seq, Position: p, ServerTime: h.now}
	h.rd = h.c.Event(h.at(), 100, ev, h.now)
}

func (h *harness) filled(ticket int64) {
	a := h.rd.Send.Action
	h.rd = h.c.OrderDone(h.at(), OrderOutcome{Result: broker.OrderResult{Ticket: ticket, Volume: a.Volume, Price: 1.1001, ServerTime: h.now}, SentAt: h.now})
}

func (h *harness) failed(err error) {
	h.rd = h.c.OrderDone(h.at(), OrderOutcome{Err: err, SentAt: h.now})
}

// mpos is master position ticket, EURUSD buy 1 lot, opened just now.
func (h *harness) mpos(ticket int64) broker.Position {
	return broker.Position{Ticket: ticket, Symbol: "EURUSD", Side: broker.Buy, Volume: 1, OpenPrice: 1.1, OpenTime: h.now}
}

func hasNote(rd *Ready, k NoteKind) *Note {
	for i := range rd.Notes {
		if rd.Notes[i].Kind == k {
			return &rd.Notes[i]
		}
	}
	return nil
}

// opens is a plan of EURUSD buy 1 lot opens, one per master ticket.
func opens(masterTickets ...int64) reconcile.Result {
	var r reconcile.Result
	for _, t := range masterTickets {
		r.Actions = append(r.Actions, reconcile.Action{Kind: reconcile.Open, Symbol: "EURUSD", Side: broker.Buy, Volume: 1, MasterTicket: t})
	}
	return r
}
