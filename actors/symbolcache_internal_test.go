package actors

import (
	"context"
	"fmt"
	"reflect"
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
	cache.share(master, nil, now)
	if n := cache.len(); n != 1 {
		t.Fatalf("%d entries after the others aged out, want 1", n)
	}
}

// TestPeriodicRepairReadsAQuoteForALateCopy: a periodic repair that finds a master
// position to copy late, under a price-deviation bound, reads the follower's symbols again
// instead of checking the copy against the quote of the reused specifications (35 s old),
// and plans it against the quote it read, though the map it keeps is the one the server's
// accounts share (with that map's older quotes).
func TestPeriodicRepairReadsAQuoteForALateCopy(t *testing.T) {
	ctx := context.Background()
	start := time.Unix(1_800_000_000, 0)
	now := start
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
	if !resp.Follower.QuotesAt.Equal(start) {
		// The map kept is the one the server's accounts share, made by the start's reading.
		t.Fatalf("follower quotes kept dated %v, want the shared map's %v", resp.Follower.QuotesAt, start)
	}
	if plan := resp.Plans[link.ID]; len(plan.Actions) != 1 || plan.Actions[0].Kind != reconcile.Open || plan.NeedsQuote() {
		t.Fatalf("plan %+v, want the late copy opened against the current quote", plan)
	}
}

// TestAccountsOfOneServerShareASymbolMap: the symbol specifications read from accounts of
// one trade server are kept as one map, quotes aside; another server's, or a reading made
// once the shared map is SymbolsMaxAge old, are kept as a map of their own.
func TestAccountsOfOneServerShareASymbolMap(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { return now }
	spec := sim.SymbolConfig{Name: "EURUSD", ContractSize: 100000, MinLot: 0.01, MaxLot: 100, LotStep: 0.01, Digits: 5, SpreadPoints: 10, Price: 1.085}
	server := func(minLot float64) *sim.Server {
		s := spec
		s.MinLot = minLot
		return sim.New(sim.Config{Seed: 1, AutoProvision: true, Clock: clock, Symbols: []sim.SymbolConfig{s}})
	}
	one, other := server(0.01), server(0.1)
	var asked atomic.Int64
	master := countedSessions(t, one, &asked)("m1")
	cache := newSymbolCache(time.Minute, clock)
	link := reconcile.Link{ID: 5, Magic: 9, Settings: reconcile.DefaultSettings()}
	kept := func(srv *sim.Server, login string) (map[string]broker.SymbolSpec, time.Time) {
		t.Helper()
		resp := reconcileLink(t, follower.CauseStart, countedSessions(t, srv, &asked)(login), master, link, now, cache)
		return resp.Follower.Symbols, resp.Follower.QuotesAt
	}
	same := func(a, b map[string]broker.SymbolSpec) bool {
		return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
	}
	first, firstAt := kept(one, "f1")
	one.SetPrice("EURUSD", 1.2) // quotes differ, specifications do not
	now = now.Add(59 * time.Second)
	second, secondAt := kept(one, "f2")
	if !same(first, second) || !secondAt.Equal(firstAt) {
		t.Fatalf("two accounts of one server keep two maps (quotes read %v and %v)", firstAt, secondAt)
	}
	if third, _ := kept(other, "f3"); same(first, third) || third["EURUSD"].MinLot != 0.1 {
		t.Fatalf("an account of another server keeps the first server's map: %+v", third["EURUSD"])
	}
	now = now.Add(time.Second)
	if fourth, at := kept(one, "f4"); same(first, fourth) || !at.Equal(now) || fourth["EURUSD"].Ask != 1.2001 {
		t.Fatalf("a reading once the shared map is SymbolsMaxAge old is not kept as a map of its own (read %v, %+v)", at, fourth["EURUSD"])
	}
}

// TestSameSpecsIgnoresOnlyQuotes: two readings are one table when they differ in quotes
// only; a symbol more, or any other field of a specification, makes them two.
func TestSameSpecsIgnoresOnlyQuotes(t *testing.T) {
	base := func() map[string]broker.SymbolSpec {
		return map[string]broker.SymbolSpec{"EURUSD": {Name: "EURUSD", ContractSize: 100000, MinLot: 0.01, MaxLot: 100, LotStep: 0.01, Digits: 5, Point: 1e-5, TradeAllowed: true, Bid: 1.1, Ask: 1.1001}}
	}
	requoted := base()
	requoted["EURUSD"] = broker.SymbolSpec{Name: "EURUSD", ContractSize: 100000, MinLot: 0.01, MaxLot: 100, LotStep: 0.01, Digits: 5, Point: 1e-5, TradeAllowed: true, Bid: 1.2, Ask: 1.2001}
	if !sameSpecs(base(), requoted) {
		t.Fatal("readings that differ in quotes only are not the same specifications")
	}
	edits := map[string]func(*broker.SymbolSpec){
		"contract size": func(s *broker.SymbolSpec) { s.ContractSize = 1000 },
		"min lot":       func(s *broker.SymbolSpec) { s.MinLot = 0.1 },
		"max lot":       func(s *broker.SymbolSpec) { s.MaxLot = 50 },
		"lot step":      func(s *broker.SymbolSpec) { s.LotStep = 0.1 },
		"digits":        func(s *broker.SymbolSpec) { s.Digits = 4 },
		"point":         func(s *broker.SymbolSpec) { s.Point = 1e-4 },
		"trade allowed": func(s *broker.SymbolSpec) { s.TradeAllowed = false },
		"name":          func(s *broker.SymbolSpec) { s.Name = "EURUSD.m" },
	}
	for what, edit := range edits {
		other := base()
		s := other["EURUSD"]
		edit(&s)
		other["EURUSD"] = s
		if sameSpecs(base(), other) || sameSpecs(other, base()) {
			t.Errorf("%s differs, yet the readings are the same specifications", what)
		}
	}
	more := base()
	more["GBPUSD"] = broker.SymbolSpec{Name: "GBPUSD"}
	if sameSpecs(base(), more) || sameSpecs(more, base()) {
		t.Error("a reading with a symbol more is the same specifications")
	}
}

// BenchmarkSymbolTablesShare: matching one reading of 300 symbols to its shared map, the
// work a reconcile that read them adds.
func BenchmarkSymbolTablesShare(b *testing.B) {
	reading := func(quote float64) map[string]broker.SymbolSpec {
		m := make(map[string]broker.SymbolSpec, 300)
		for i := range 300 {
			name := fmt.Sprintf("FX%03dUSD", i)
			m[name] = broker.SymbolSpec{Name: name, ContractSize: 100000, MinLot: 0.01, MaxLot: 100, LotStep: 0.01, Digits: 5, Point: 1e-5, TradeAllowed: true, Bid: quote, Ask: quote + 1e-4}
		}
		return m
	}
	now := time.Unix(1_800_000_000, 0)
	tables := newSymbolTables(time.Hour)
	tables.share(reading(1.1), now, now)
	next := reading(1.2)
	for b.Loop() {
		tables.share(next, now, now)
	}
}
