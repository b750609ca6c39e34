package actors

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/broker/sim"
	"github.com/snapcopier/copier/reconcile"
	"github.com/snapcopier/copier/reconcile/follower"
)

// countingSession counts the symbol lists asked of a session.
type countingSession struct {
	broker.Session
	symbols *atomic.Int64
}

func (s countingSession) Symbols(ctx context.Context) ([]broker.SymbolSpec, error) {
	s.symbols.Add(1)
	return s.Session.Symbols(ctx)
}

// countedSessions connects to srv as login, counting the symbol lists asked of the
// sessions in asked.
func countedSessions(t *testing.T, srv *sim.Server, asked *atomic.Int64) func(login string) *countingSession {
	return func(login string) *countingSession {
		t.Helper()
		s, err := srv.Connect(context.Background(), broker.Credentials{Login: login})
		if err != nil {
			t.Fatal(err)
		}
		return &countingSession{Session: s, symbols: asked}
	}
}

// reconcileLink runs the Reconciler's job for follower 2 and its one link, to master 1.
func reconcileLink(t *testing.T, cause follower.Cause, fol, master broker.Session, link reconcile.Link, now time.Time, cache *symbolCache) reconcileResponse {
	t.Helper()
	req := reconcileRequest{accountID: 2, follower: fol, masters: map[int64]broker.Session{1: master},
		ask: follower.Ask{Cause: cause, Masters: []int64{1}, Links: []follower.AskLink{{MasterID: 1, Link: link}}}}
	resp := runReconcile(context.Background(), req, now, cache)
	if resp.Err != nil {
		t.Fatal(resp.Err)
	}
	return resp
}

// TestReconcilesReuseSymbolSpecs: every reconcile takes the master's symbol
// specifications from an earlier reading while it is younger than SymbolsMaxAge; a
// periodic repair takes the follower's the same way, and a reconcile of any other cause
// reads the follower's again (and refreshes what later repairs reuse). Each plan sees the
// specifications either way.
func TestReconcilesReuseSymbolSpecs(t *testing.T) {
	srv := sim.New(sim.Config{Seed: 1, AutoProvision: true, DefaultAccount: broker.AccountSpec{Currency: "USD", Balance: 1e5, Leverage: 100, Mode: broker.Hedging}})
	var ofFollower, ofMaster atomic.Int64
	master, fol := countedSessions(t, srv, &ofMaster)("m1"), countedSessions(t, srv, &ofFollower)("f1")
	now := time.Unix(1_800_000_000, 0)
	cache := newSymbolCache(time.Minute, func() time.Time { return now })
	link := reconcile.Link{ID: 5, Magic: 9, Settings: reconcile.DefaultSettings()}
	reconcileOnce := func(cause follower.Cause) {
		t.Helper()
		resp := reconcileLink(t, cause, fol, master, link, now, cache)
		if len(resp.Follower.Symbols) == 0 || len(resp.Masters[1].Symbols) == 0 {
			t.Fatalf("%v reconcile: symbols of the follower %d, of the master %d", cause, len(resp.Follower.Symbols), len(resp.Masters[1].Symbols))
		}
	}
	expect := func(what string, follower, master int64) {
		t.Helper()
		if f, m := ofFollower.Swap(0), ofMaster.Swap(0); f != follower || m != master {
			t.Fatalf("%s: symbol lists asked of the follower %d, of the master %d; want %d, %d", what, f, m, follower, master)
		}
	}
	reconcileOnce(follower.CauseStart)
	expect("first reconcile", 1, 1)
	reconcileOnce(follower.CausePeriodic)
	now = now.Add(59 * time.Second)
	reconcileOnce(follower.CausePeriodic)
	expect("periodic repairs within the age", 0, 0)
	for _, c := range []follower.Cause{follower.CauseStart, follower.CauseGap, follower.CauseUnknown, follower.CauseOrderFailed, follower.CauseAgain, follower.CauseConfig} {
		reconcileOnce(c)
		expect(c.String()+" reconcile", 1, 0)
	}
	now = now.Add(59 * time.Second) // 59 s after the follower's last reading, 118 s after the master's
	reconcileOnce(follower.CausePeriodic)
	expect("a periodic repair 59 s after the follower's reading", 0, 1)
	now = now.Add(time.Second)
	reconcileOnce(follower.CausePeriodic)
	expect("a periodic repair once the follower's reading is SymbolsMaxAge old", 1, 0)

	// A reconnected account has a session of its own: nothing carries over.
	fol = countedSessions(t, srv, &ofFollower)("f1")
	reconcileOnce(follower.CausePeriodic)
	expect("a periodic repair on a new follower session", 1, 0)
	// Entries of sessions gone are dropped once they are SymbolsMaxAge old.
	now = now.Add(2 * time.Minute)
	cache.put(master, nil)
	if n := cache.len(); n != 1 {
		t.Fatalf("%d entries after the others aged out, want 1", n)
	}
}

// TestPeriodicRepairReadsAQuoteForALateCopy: a periodic repair that finds a master
// position to copy late, under a price-deviation bound, reads the follower's symbols again
// instead of checking the copy against the quote of the reused specifications (35 s old),
// and plans it against the quote it read.
func TestPeriodicRepairReadsAQuoteForALateCopy(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1_800_000_000, 0)
	srv := sim.New(sim.Config{Seed: 1, AutoProvision: true, Clock: func() time.Time { return now },
		DefaultAccount: broker.AccountSpec{Currency: "USD", Balance: 1e5, Leverage: 100, Mode: broker.Hedging},
		Symbols:        []sim.SymbolConfig{{Name: "EURUSD", ContractSize: 100000, MinLot: 0.01, MaxLot: 100, LotStep: 0.01, Digits: 5, SpreadPoints: 10, Price: 1.085}}})
	var asked atomic.Int64
	session := countedSessions(t, srv, &asked)
	master, fol := session("m1"), session("f1")
	cache := newSymbolCache(time.Minute, func() time.Time { return now })
	settings := reconcile.DefaultSettings()
	settings.Window.MaxDeviationPoints = 30
	link := reconcile.Link{ID: 5, Magic: 9, Settings: settings}
	reconcileOnce := func(cause follower.Cause) reconcileResponse {
		t.Helper()
		return reconcileLink(t, cause, fol, master, link, now, cache)
	}
	reconcileOnce(follower.CauseStart)
	asked.Store(0)
	now = now.Add(30 * time.Second)
	srv.SetPrice("EURUSD", 1.2) // 11,500 points from the reused quote
	if _, err := srv.MasterOpen(ctx, "m1", broker.MasterOpenRequest{Symbol: "EURUSD", Side: broker.Buy, Volume: 1, Magic: 1}); err != nil {
		t.Fatal(err)
	}
	now = now.Add(5 * time.Second)
	resp := reconcileOnce(follower.CausePeriodic)
	if got := asked.Load(); got != 1 {
		t.Fatalf("%d symbol lists asked, want 1 (the follower's, for its quote)", got)
	}
	if !resp.Follower.QuotesAt.Equal(now) {
		t.Fatalf("follower quotes dated %v, want the repair's %v", resp.Follower.QuotesAt, now)
	}
	if plan := resp.Plans[link.ID]; len(plan.Actions) != 1 || plan.Actions[0].Kind != reconcile.Open || plan.NeedsQuote() {
		t.Fatalf("plan %+v, want the late copy opened against the current quote", plan)
	}
}
