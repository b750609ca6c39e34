package reconcile

import (
	"fmt"
	"math"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/snapcopier/copier/broker"
)

// The model-based check of the planner (issue #16). A follower simulator (sim_test.go)
// fills every action the way a MetaTrader 5 server would and applies the ticket map
// changes the engine writes (actors: the changes of each executed order, the plan's Track
// and Untrack, UnknownOutcomeChanges after a timeout; a permanent rejection goes on with
// the plan). Histories interleave master events (fast path and reconcile), partial closes,
// user closes and partial closes on the follower, manual trades, comment overwrites,
// settings changes, lost ticket map writes, unknown outcomes, rejected orders, opens sent
// twice by a stale owner and map entries of unknown ratio (issue #28), on hedging and
// netting followers with one or two links, on symbols of 0.01 or 0.1 lot steps.
// Beside the engine's map the model keeps the true map: every change of every order that
// executed, written or not (and the changes a plan makes without an order, when written).
//
// Checked against README.md: every plan (checkPlan: only the link's positions touched, lot
// rules, one open per master, order independence), the sizing of every new copy
// (readmeVolume, which skips a copy max_lots_per_symbol has no room for), limits after
// every plan that opens, a max_open_copies skip only at the limit (checkOpenCopies),
// positions of no link untouched, the reconcile after an event never undoing it, nothing
// to do after applying a link's plan, convergence, no duplicate copy (hedging), a
// netting position equal to the net of what its map entries carry (checkNet), and a
// repair after a lost write or an unknown outcome ending where the repair from the true
// map ends (compareRepair).
//
// In the suite it runs 100 histories; `go test ./reconcile -run TestPlannerModel
// -rapid.checks=100000` runs it long (a minute or two).

// modelStats counts what the histories did, so that a run shows it exercised the planner.
type modelStats struct {
	histories, steps, actions, lost, unknown, userClosedRepairs atomic.Int64
	netting, rejected, resent, unmarked, unknownRatios          atomic.Int64
}

// mlink is one link of the model and its master account.
type mlink struct {
	link     Link
	master   AccountState
	next     int64
	restrict Restriction // what the link's protections allow (restrict_test.go)
}

// model is a follower with one or two links.
type model struct {
	stats *modelStats
	mode  broker.AccountMode
	f     *follower        // positions and the engine's ticket map
	truth []TicketMapEntry // the map with every write of every executed order
	info  broker.AccountInfo
	specs map[string]broker.SymbolSpec
	links []*mlink
	now   time.Time
}

var modelSymbols = []string{"EURUSD", "GBPUSD"}

func genModel(t *rapid.T, stats *modelStats) *model {
	md := &model{
		stats: stats,
		mode:  rapid.SampledFrom([]broker.AccountMode{broker.Hedging, broker.Netting}).Draw(t, "mode"),
		now:   now(),
		specs: map[string]broker.SymbolSpec{},
	}
	md.f = &follower{mode: md.mode}
	md.info = broker.AccountInfo{Login: "f", Balance: 10_000, Equity: 10_000, Mode: md.mode}
	for _, name := range modelSymbols {
		spec := fx(name)
		spec.MinLot = rapid.SampledFrom([]float64{0.01, 0.1}).Draw(t, "minLot "+name)
		// A 0.1 step puts max_lots_per_symbol 0.05 below one step (issue #28).
		spec.LotStep = rapid.SampledFrom([]float64{0.01, 0.01, 0.1}).Draw(t, "lotStep "+name)
		spec.MinLot = math.Max(spec.MinLot, spec.LotStep)
		spec.MaxLot = rapid.SampledFrom([]float64{1, 100}).Draw(t, "maxLot "+name)
		md.specs[name] = spec
	}
	for i := range rapid.IntRange(1, 2).Draw(t, "links") {
		ml := &mlink{next: 500}
		ml.link = Link{ID: int64(i + 1), Magic: int64(1001 + i), Settings: genModelSettings(t)}
		ml.master = AccountState{Info: broker.AccountInfo{Login: fmt.Sprintf("m%d", i), Balance: 10_000, Equity: 10_000},
			Symbols: specs(fx("EURUSD"), fx("GBPUSD"))}
		md.links = append(md.links, ml)
	}
	return md
}

func genModelSettings(t *rapid.T) Settings {
	s := DefaultSettings()
	s.Sizing.Mode = rapid.SampledFrom([]SizingMode{SizeLotMultiplier, SizeLotMultiplier, SizeFixedLot, SizeRiskPercent, SizeEquityRatio}).Draw(t, "sizing")
	s.Sizing.FixedLot = rapid.SampledFrom([]float64{0.01, 0.1, 0.37}).Draw(t, "fixedLot")
	s.Sizing.Multiplier = rapid.SampledFrom([]float64{0.1, 0.5, 1, 3}).Draw(t, "multiplier")
	s.Sizing.RiskPercent = rapid.SampledFrom([]float64{0.5, 1}).Draw(t, "riskPercent")
	s.Sizing.MinLot = rapid.SampledFrom([]float64{0, 0, 0.05}).Draw(t, "sMinLot")
	s.Sizing.MaxLot = rapid.SampledFrom([]float64{0, 0, 0.5}).Draw(t, "sMaxLot")
	s.Sizing.ForceMin = rapid.Bool().Draw(t, "forceMin")
	s.Reverse = rapid.IntRange(0, 3).Draw(t, "reverse") == 0
	s.Stops.Mode = rapid.SampledFrom([]StopsMode{StopsCopy, StopsNone, StopsFixed}).Draw(t, "stops")
	if s.Stops.Mode == StopsFixed {
		s.Stops.SLPoints = rapid.SampledFrom([]float64{0, 150}).Draw(t, "slPoints")
		s.Stops.TPPoints = 300
	}
	s.Limits.MaxOpenCopies = rapid.SampledFrom([]int{0, 0, 2}).Draw(t, "maxOpenCopies")
	s.Limits.MaxLotsPerSymbol = rapid.SampledFrom([]float64{0, 0, 0.05, 1}).Draw(t, "maxLotsPerSymbol")
	s.Window.MaxAgeSeconds = rapid.SampledFrom([]int{60, 0}).Draw(t, "maxAge")
	if err := s.Validate(); err != nil {
		t.Fatalf("generated invalid settings: %v", err)
	}
	return s
}

// input is the planner's view of link i with the given ticket map.
func (md *model) input(i int, tm []TicketMapEntry) Input {
	ml := md.links[i]
	return Input{Master: ml.master, Link: ml.link, TicketMap: slices.Clone(tm), Now: md.now, Restrict: ml.restrict,
		Follower: AccountState{Info: md.info, Positions: slices.Clone(md.f.positions), Symbols: md.specs}}
}

// clone copies the model's follower, maps and link states (masters are shared: plans
// never change them).
func (md *model) clone() *model {
	c := *md
	f := *md.f
	f.positions, f.ticketMap = slices.Clone(md.f.positions), slices.Clone(md.f.ticketMap)
	c.f, c.truth = &f, slices.Clone(md.truth)
	c.links = nil
	for _, ml := range md.links {
		l := *ml
		c.links = append(c.links, &l)
	}
	return &c
}

// apply executes a plan of link i. The engine writes the map changes of each executed
// action and Result.Track/Untrack unless lost; an action whose outcome is unknown
// (unknown ≥ 0: its index) stops the plan, executed or not (hit), and the engine writes
// its UnknownOutcomeChanges. The true map gets every change of every executed order.
func (md *model) apply(t *rapid.T, i int, res Result, lost bool, unknown int, hit bool) {
	md.applyRejecting(t, i, res, lost, unknown, hit, -1)
}

// applyRejecting is apply where the server rejects action reject for good (no money,
// invalid volume): it does nothing and the engine goes on with the plan.
func (md *model) applyRejecting(t *rapid.T, i int, res Result, lost bool, unknown int, hit bool, reject int) {
	id := md.links[i].link.ID
	foreign := md.foreignPositions()
	md.stats.actions.Add(int64(len(res.Actions)))
	done := res
	done.Actions = nil // the actions executed
	for k, a := range res.Actions {
		if k == reject {
			continue
		}
		if k == unknown {
			track, untrack := a.UnknownOutcomeChanges(id, md.mode)
			md.f.ticketMap = applyMap(md.f.ticketMap, track, untrack)
			if !hit {
				// Not executed, the order still recorded the decision to copy the master
				// positions it tracks (they hold their max_open_copies slots): the truth
				// takes it too, or the repairs would differ only in which of two master
				// positions the limit admits.
				md.truth = applyMap(md.truth, track, untrack)
				break
			}
		}
		ticket := md.f.do(a, md.now)
		done.Actions = append(done.Actions, a)
		track, untrack := a.MapChanges(id, broker.OrderResult{Ticket: ticket, Volume: a.Volume})
		md.truth = applyMap(md.truth, track, untrack)
		if !lost && k != unknown {
			md.f.ticketMap = applyMap(md.f.ticketMap, track, untrack)
		}
		if k == unknown {
			break
		}
	}
	// Result.Track and Untrack are the plan's reading of the state, not what an order did:
	// lost, they leave nothing at the broker, and the next plan reads the state again.
	if !lost {
		md.truth = applyMap(md.truth, res.Track, res.Untrack)
		md.f.ticketMap = applyMap(md.f.ticketMap, res.Track, res.Untrack)
	}
	if after := md.foreignPositions(); !slices.Equal(foreign, after) {
		t.Fatalf("link %d's plan changed positions of no link's magic:\nbefore %+v\nafter  %+v\nplan %v", id, foreign, after, res.Actions)
	}
	if reject < 0 { // a rejected close does not free what the plan counted on
		md.checkLimits(t, i, done)
	}
}

// applyMap upserts track and drops untrack.
func applyMap(m []TicketMapEntry, track, untrack []TicketMapEntry) []TicketMapEntry {
	for _, e := range track {
		m = slices.DeleteFunc(m, func(x TicketMapEntry) bool { return x.LinkID == e.LinkID && x.MasterTicket == e.MasterTicket })
		m = append(m, e)
	}
	for _, e := range untrack {
		m = slices.DeleteFunc(m, func(x TicketMapEntry) bool { return x.LinkID == e.LinkID && x.MasterTicket == e.MasterTicket })
	}
	return m
}

// foreignPositions are the follower positions of no link's magic number.
func (md *model) foreignPositions() []broker.Position {
	var out []broker.Position
	for _, p := range md.f.positions {
		if !slices.ContainsFunc(md.links, func(ml *mlink) bool { return ml.link.Magic == p.Magic }) {
			out = append(out, p)
		}
	}
	return out
}

// nets is the link's signed lots by symbol.
func (md *model) nets(magic int64) map[string]float64 {
	out := map[string]float64{}
	for _, p := range md.f.positions {
		if p.Magic == magic {
			out[p.Symbol] += float64(p.Side) * p.Volume
		}
	}
	return out
}

// lotsOn is the link's follower lots on a symbol: the sum of its copies (hedging), the
// size of its position (netting).
func (md *model) lotsOn(magic int64, symbol string) (lots float64, copies int) {
	for _, p := range md.f.positions {
		if p.Magic == magic && p.Symbol == symbol {
			lots += p.Volume
			copies++
		}
	}
	return lots, copies
}

// checkLimits (README, limits): a plan that opens leaves the link's lots on the symbol
// within max_lots_per_symbol and, on a hedging follower, its copies within
// max_open_copies.
func (md *model) checkLimits(t *rapid.T, i int, res Result) {
	ml := md.links[i]
	l := ml.link.Settings.Limits
	for _, a := range res.Actions {
		if a.Kind != Open {
			continue
		}
		lots, _ := md.lotsOn(ml.link.Magic, a.Symbol)
		if l.MaxLotsPerSymbol > 0 && lots > l.MaxLotsPerSymbol+1e-9 {
			t.Fatalf("link %d: %v leaves %v lots on %s, limit %v\nplan %v\nfollower %+v\nmap %v\nmaster %+v", ml.link.ID, a, lots, a.Symbol, l.MaxLotsPerSymbol,
				res.Actions, md.f.positions, md.f.ticketMap, ml.master.Positions)
		}
		if md.mode == broker.Hedging && l.MaxOpenCopies > 0 {
			n := 0
			for _, p := range md.f.positions {
				if p.Magic == ml.link.Magic {
					n++
				}
			}
			if n > l.MaxOpenCopies {
				t.Fatalf("link %d: %d copies open, limit %d", ml.link.ID, n, l.MaxOpenCopies)
			}
		}
	}
}

// reconcile plans and executes every link until all are converged (a netting link's
// close may free a symbol another waits for), checking every plan.
func (md *model) reconcile(t *rapid.T) {
	tm := func() []TicketMapEntry { return md.f.ticketMap }
	for round := 0; ; round++ {
		busy := false
		for i := range md.links {
			in := md.input(i, tm())
			res := Plan(in)
			checkPlan(t, in, res, Plan)
			md.checkSizing(t, i, in, res)
			if res.Converged() {
				md.checkOpenCopies(t, i, in, res)
				continue
			}
			busy = true
			if round > len(md.links)+1 {
				t.Fatalf("link %d does not converge (round %d): %v\nfollower %+v\nmap %v", i+1, round, res, md.f.positions, tm())
			}
			md.apply(t, i, res, false, -1, false)
			// Package doc: applying a plan and planning again yields nothing to do (only
			// another link's close can give this one work: a symbol it frees).
			if again := Plan(md.input(i, tm())); !again.Converged() {
				t.Fatalf("link %d: planning again after applying %v (track %v, untrack %v) gives %v (track %v, untrack %v)\nfollower %+v\nmap %v\nbefore: follower %+v\nmap %v\nmaster %+v",
					i+1, res.Actions, res.Track, res.Untrack, again.Actions, again.Track, again.Untrack, md.f.positions, tm(),
					in.Follower.Positions, in.TicketMap, in.Master.Positions)
			}
		}
		if !busy {
			return
		}
	}
}

// checkOpenCopies (README, limits): a converged plan skips a master position for
// max_open_copies only while the link holds that many copies: hedging, positions of its
// magic; netting, master positions its positions carry (map entries pointing at one of
// them or, flat, at 0, and the masters their markers name).
func (md *model) checkOpenCopies(t *rapid.T, i int, in Input, res Result) {
	l := md.links[i].link
	if !slices.ContainsFunc(res.Skipped, func(s Skip) bool { return s.Reason == SkipMaxOpenCopies }) {
		return
	}
	held := map[int64]bool{}
	carried := map[int64]bool{}
	for _, p := range in.Follower.Positions {
		if p.Magic != l.Magic {
			continue
		}
		held[p.Ticket] = true
		if mt, ok := ParseMarker(p.Comment); ok {
			carried[mt] = true
		}
	}
	n := len(held)
	if md.mode == broker.Netting {
		for _, e := range in.TicketMap {
			if e.LinkID == l.ID && (e.FollowerTicket == 0 || held[e.FollowerTicket]) {
				carried[e.MasterTicket] = true
			}
		}
		n = 0
		for mt := range carried {
			if _, open := findPos(in.Master.Positions, mt); open {
				n++
			}
		}
	}
	if n < l.Settings.Limits.MaxOpenCopies {
		t.Fatalf("link %d: skips %v with %d copies (limit %d)\nfollower %+v\nmap %v\nmaster %+v", l.ID, res.Skipped, n,
			l.Settings.Limits.MaxOpenCopies, in.Follower.Positions, in.TicketMap, in.Master.Positions)
	}
}

// check asserts the converged follower against README's rules.
func (md *model) check(t *rapid.T) {
	for i, ml := range md.links {
		if md.mode == broker.Hedging {
			checkNoDuplicates(t, &world{f: md.f}, &linkWorld{link: ml.link})
			continue
		}
		for _, name := range modelSymbols {
			md.checkNet(t, i, name)
		}
	}
}

// checkNet (README, sizing and limits; package doc, the ticket map): on a netting follower
// the link's position on a symbol is the net of the master positions its map entries
// carry (ratio × the master's volume, on the copy's side), rounded down to the step,
// capped at the maximum, max_lot and max_lots_per_symbol, 0 below the minimum unless
// force_min raises it (never above max_lots_per_symbol); it may differ from that by less
// than the minimum volume, which cannot be traded.
func (md *model) checkNet(t *rapid.T, i int, name string) {
	ml := md.links[i]
	s := ml.link.Settings
	var pos *broker.Position
	for k, p := range md.f.positions {
		if p.Symbol == name && p.Magic == ml.link.Magic {
			pos = &md.f.positions[k]
		}
		if p.Symbol == name && p.Magic != ml.link.Magic {
			return // busy: the link leaves the symbol alone
		}
	}
	var at int64
	if pos != nil {
		at = pos.Ticket
	}
	net := 0.0
	for _, e := range md.f.ticketMap {
		if e.LinkID != ml.link.ID || e.FollowerTicket != at {
			continue
		}
		m, open := findPos(ml.master.Positions, e.MasterTicket)
		if !open {
			t.Fatalf("link %d: converged with an entry of closed master %d: %v", ml.link.ID, e.MasterTicket, e)
		}
		if m.Symbol != name {
			continue
		}
		side := m.Side
		if s.Reverse {
			side = side.Opposite()
		}
		net += float64(side) * e.Volume * m.Volume
	}
	spec := md.specs[name]
	lo, hi := minOnStep(spec, s), spec.MaxLot
	if s.Sizing.MaxLot > 0 {
		hi = math.Min(hi, s.Sizing.MaxLot)
	}
	capAt := hi
	if l := s.Limits.MaxLotsPerSymbol; l > 0 {
		capAt = math.Min(capAt, RoundDownToStep(l, spec.LotStep))
	}
	want := math.Min(RoundDownToStep(math.Abs(net), spec.LotStep), capAt)
	if want < lo {
		if s.Sizing.ForceMin && want > 0 && lo <= capAt {
			want = lo
		} else {
			want = 0
		}
	}
	want *= float64(sideOf(net))
	got := 0.0
	if pos != nil {
		got = float64(pos.Side) * pos.Volume
	}
	off := math.Abs(got-want) >= spec.MinLot-1e-9 || // a difference the planner can trade
		got != 0 && (want == 0 || sideOf(got) != sideOf(want)) // a close it always can
	if off {
		t.Fatalf("link %d %s: position %v, the net of its entries is %v (target %v)\nfollower %+v\nmap %v\nmaster %+v",
			ml.link.ID, name, got, net, want, md.f.positions, md.f.ticketMap, ml.master.Positions)
	}
}

func findPos(ps []broker.Position, ticket int64) (broker.Position, bool) {
	i := slices.IndexFunc(ps, func(p broker.Position) bool { return p.Ticket == ticket })
	if i < 0 {
		return broker.Position{}, false
	}
	return ps[i], true
}

// compareRepair: the repair from the engine's map ends, on every symbol, where the repair
// from the true map ends, so that a lost write or an unknown outcome never closes what the
// masters still need, nor duplicates a copy.
//
// One ambiguity is inherent: when a lost write leaves the engine's map pointing at a
// position that is gone, the map is exactly what a user's close of that position leaves,
// and the planner must take it for one (README: a copy closed on the follower is not
// reopened). On such a symbol the repair may end where the true map would end had the user
// closed the positions the engine's map points at.
func (md *model) compareRepair(t *rapid.T, why string) {
	for _, p := range md.f.positions {
		if _, ok := ParseMarker(p.Comment); !ok && p.Magic != 77 {
			// The server overwrote a copy's marker: with the map's write lost too, nothing
			// identifies what the position carries (README: copies are found through the
			// map and, failing that, the marker). Only the other checks apply.
			md.stats.unmarked.Add(1)
			md.reconcile(t)
			md.truth = slices.Clone(md.f.ticketMap)
			return
		}
	}
	truth := md.clone()
	truth.f.ticketMap = slices.Clone(truth.truth)
	userClosed := md.clone()
	userClosed.f.ticketMap = slices.Clone(userClosed.truth)
	for _, e := range md.f.ticketMap {
		if e.FollowerTicket != 0 && md.f.find(e.FollowerTicket) < 0 {
			userClosed.f.ticketMap = applyMap(userClosed.f.ticketMap, []TicketMapEntry{e}, nil)
		}
	}
	start, trueStart := md.clone(), slices.Clone(md.truth)
	truth.reconcile(t)
	userClosed.reconcile(t)
	md.reconcile(t)
	got, want, alt := md.book(), truth.book(), userClosed.book()
	for k := range union(got, want, alt) {
		if got[k] != want[k] {
			md.stats.userClosedRepairs.Add(1)
			if got[k] != alt[k] {
				t.Fatalf("after %s the repair ends on %s with %+.2f, from the true map with %+.2f (with the user's closes %+.2f)\nfollower %+v\nmap  %v\nbefore the repair: follower %+v\nmap  %v\ntrue %v\nmaster %+v",
					why, k, got[k], want[k], alt[k], md.f.positions, md.f.ticketMap, start.f.positions, start.f.ticketMap, trueStart, md.links[0].master.Positions)
			}
		}
	}
	// From here on the engine's map is what it is; the truth follows the repair.
	md.truth = slices.Clone(md.f.ticketMap)
}

// union is the set of keys of books.
func union(books ...map[string]float64) map[string]bool {
	out := map[string]bool{}
	for _, b := range books {
		for k := range b {
			out[k] = true
		}
	}
	return out
}

// book is the signed lots of the follower's positions by "magic symbol" (hedging: and
// comment, the copy's marker).
func (md *model) book() map[string]float64 {
	out := map[string]float64{}
	for _, p := range md.f.positions {
		k := fmt.Sprintf("%d %s", p.Magic, p.Symbol)
		if md.mode == broker.Hedging {
			k += " " + p.Comment
		}
		out[k] = lots(out[k] + float64(p.Side)*p.Volume)
	}
	return out
}

// masterOpen draws a new master position of link ml.
func (md *model) masterOpen(t *rapid.T, ml *mlink) broker.Position {
	side := rapid.SampledFrom([]broker.Side{broker.Buy, broker.Sell}).Draw(t, "side")
	ml.next += int64(rapid.IntRange(1, 2).Draw(t, "ticketGap"))
	p := broker.Position{Ticket: ml.next, Symbol: rapid.SampledFrom(modelSymbols).Draw(t, "symbol"), Side: side,
		Volume:    float64(rapid.IntRange(1, 120).Draw(t, "volumeCents")) / 100,
		OpenPrice: 1.1, OpenTime: md.now.Add(-time.Duration(rapid.IntRange(0, 30).Draw(t, "age")) * time.Second)}
	if rapid.Bool().Draw(t, "hasSL") {
		p.SL = roundTo(p.OpenPrice-float64(side)*float64(rapid.IntRange(100, 500).Draw(t, "slPoints"))*0.00001, 0.00001)
	}
	if rapid.Bool().Draw(t, "hasTP") {
		p.TP = roundTo(p.OpenPrice+float64(side)*float64(rapid.IntRange(100, 500).Draw(t, "tpPoints"))*0.00001, 0.00001)
	}
	return p
}

// masterEvent changes link li's master and returns the event.
func (md *model) masterEvent(t *rapid.T, li int) (broker.Event, bool) {
	ml := md.links[li]
	mps := ml.master.Positions
	ev := func(kind broker.EventKind, p broker.Position) (broker.Event, bool) {
		return broker.Event{Login: ml.master.Info.Login, Kind: kind, Position: p, ServerTime: md.now}, true
	}
	k := rapid.IntRange(0, 3).Draw(t, "masterChange")
	if k == 0 || len(mps) == 0 {
		p := md.masterOpen(t, ml)
		ml.master.Positions = append(slices.Clone(mps), p)
		return ev(broker.Opened, p)
	}
	i := rapid.IntRange(0, len(mps)-1).Draw(t, "masterPos")
	p := mps[i]
	ml.master.Positions = slices.Clone(mps)
	switch k {
	case 1:
		ml.master.Positions = slices.Delete(ml.master.Positions, i, i+1)
		return ev(broker.Closed, p)
	case 2:
		if p.Volume <= 0.01 {
			return broker.Event{}, false
		}
		p.Volume = float64(rapid.IntRange(1, int(math.Round(p.Volume*100))-1).Draw(t, "remainCents")) / 100
		ml.master.Positions[i] = p
		return ev(broker.PartiallyClosed, p)
	default:
		p.SL = rapid.SampledFrom([]float64{0, roundTo(p.OpenPrice-float64(p.Side)*0.002, 0.00001)}).Draw(t, "newSL")
		ml.master.Positions[i] = p
		return ev(broker.Modified, p)
	}
}

// eventPlan changes link li's master and returns the plan of the change: the event's
// (fast path) or a reconcile's (the event was missed).
func (md *model) eventPlan(t *rapid.T, li int) (Result, bool) {
	before := md.input(li, md.f.ticketMap)
	ev, ok := md.masterEvent(t, li)
	if !ok {
		return Result{}, false
	}
	if rapid.Bool().Draw(t, "eventPath") {
		before.Now = md.now
		return PlanEvent(ev, before), true
	}
	return Plan(md.input(li, md.f.ticketMap)), true
}

// step makes one change of the history and reconciles.
func (md *model) step(t *rapid.T) {
	li := rapid.IntRange(0, len(md.links)-1).Draw(t, "link")
	ml := md.links[li]
	switch rapid.IntRange(0, 15).Draw(t, "step") {
	case 0, 1, 2: // a master event: the fast path, or missed and left to the reconcile
		before := md.input(li, md.f.ticketMap)
		ev, ok := md.masterEvent(t, li)
		if ok && rapid.Bool().Draw(t, "fastPath") {
			res := PlanEvent(ev, before)
			checkPlan(t, before, res, func(in Input) Result { return PlanEvent(ev, in) })
			b := md.nets(ml.link.Magic)
			md.apply(t, li, res, false, -1, false)
			e := md.nets(ml.link.Magic)
			opened := map[int64]bool{}
			for _, p := range md.f.positions {
				if !slices.ContainsFunc(before.Follower.Positions, func(q broker.Position) bool { return q.Ticket == p.Ticket }) {
					opened[p.Ticket] = true
				}
			}
			// The reconcile that follows never undoes what the event did (package doc: the
			// fast path can never do what a reconcile would undo).
			again := Plan(md.input(li, md.f.ticketMap))
			for _, a := range again.Actions {
				undo := opened[a.FollowerTicket] && (a.Kind == Close || a.Kind == PartialClose)
				if md.mode == broker.Netting {
					d := e[a.Symbol] - b[a.Symbol]
					if math.Abs(d) > 1e-9 && a.Kind != Modify {
						after := md.clone()
						after.f.do(a, md.now)
						undo = undo || (after.nets(ml.link.Magic)[a.Symbol]-e[a.Symbol])*d < -1e-12
					}
				}
				if undo {
					t.Fatalf("the reconcile after event %v undoes it: %v\nevent plan %v\nfollower %+v", ev.Kind, a, res.Actions, md.f.positions)
				}
			}
		}
	case 3: // the engine crashes after a plan's orders: every map write is lost
		if res, ok := md.eventPlan(t, li); ok {
			md.stats.lost.Add(1)
			md.apply(t, li, res, true, -1, false)
			md.compareRepair(t, "lost writes")
			return
		}
	case 4: // an order's outcome is unknown: it executed or not; the plan stops there
		if res, ok := md.eventPlan(t, li); ok {
			if len(res.Actions) > 0 {
				md.stats.unknown.Add(1)
				k := rapid.IntRange(0, len(res.Actions)-1).Draw(t, "unknownAction")
				md.apply(t, li, res, false, k, rapid.Bool().Draw(t, "executed"))
				md.compareRepair(t, "an unknown outcome")
				return
			}
		}
	case 14: // the server overwrites a comment (partial close, stop hit on MetaTrader)
		if n := len(md.f.positions); n > 0 {
			md.f.positions[rapid.IntRange(0, n-1).Draw(t, "overwrite")].Comment = rapid.SampledFrom([]string{"[sl]", "from #123", ""}).Draw(t, "comment")
		}
	case 12: // the server rejects one order of a plan for good; the engine goes on
		if _, ok := md.masterEvent(t, li); ok {
			res := Plan(md.input(li, md.f.ticketMap))
			if len(res.Actions) > 0 {
				md.stats.rejected.Add(1)
				md.applyRejecting(t, li, res, false, -1, false, rapid.IntRange(0, len(res.Actions)-1).Draw(t, "rejectedAction"))
			}
		}
	case 13: // a stale owner sends a plan's opens a second time, unrecorded
		if _, ok := md.masterEvent(t, li); ok {
			res := Plan(md.input(li, md.f.ticketMap))
			md.apply(t, li, res, false, -1, false)
			for _, a := range res.Actions {
				if a.Kind == Open {
					md.stats.resent.Add(1)
					md.f.do(a, md.now)
				}
			}
		}
	case 5: // the user (or a stop) closes a follower position
		if n := len(md.f.positions); n > 0 {
			i := rapid.IntRange(0, n-1).Draw(t, "userClose")
			md.f.positions = slices.Delete(md.f.positions, i, i+1)
		}
	case 6: // the user partially closes a follower position
		if n := len(md.f.positions); n > 0 {
			p := &md.f.positions[rapid.IntRange(0, n-1).Draw(t, "userPartial")]
			spec := md.specs[p.Symbol]
			if steps := int(math.Round((p.Volume - spec.MinLot) / spec.LotStep)); steps >= 1 {
				p.Volume = lots(p.Volume - float64(rapid.IntRange(1, steps).Draw(t, "userCut"))*spec.LotStep)
			}
		}
	case 7: // a manual trade (netting: only on a free symbol)
		name := rapid.SampledFrom(modelSymbols).Draw(t, "manualSymbol")
		if md.mode == broker.Hedging || !slices.ContainsFunc(md.f.positions, func(p broker.Position) bool { return p.Symbol == name }) {
			md.f.positions = append(md.f.positions, broker.Position{Ticket: md.f.newTicket(), Symbol: name, Side: broker.Sell,
				Volume: md.specs[name].MinLot, OpenPrice: 1.1, Magic: 77, OpenTime: md.now})
		}
	case 15: // an entry of the engine's map has no ratio (written without one): unknown
		var own []int
		for k, e := range md.f.ticketMap {
			if e.LinkID == ml.link.ID {
				own = append(own, k)
			}
		}
		if len(own) > 0 {
			md.stats.unknownRatios.Add(1)
			k := own[rapid.IntRange(0, len(own)-1).Draw(t, "unknownRatio")]
			e := md.f.ticketMap[k]
			md.f.ticketMap[k].Volume = 0
			md.truth = slices.Clone(md.f.ticketMap) // no one knows the ratio
			// README (netting followers): the engine takes the position as it is, so
			// nothing is bought or sold to repair the map (the follower was converged; on
			// a flat symbol sizing gives the ratio).
			res := Plan(md.input(li, md.f.ticketMap))
			held := md.nets(ml.link.Magic)
			if slices.ContainsFunc(res.Actions, func(a Action) bool { return a.Kind != Modify && held[a.Symbol] != 0 }) {
				t.Fatalf("link %d: the ratio of %v is unknown and the repair trades: %v\nfollower %+v\nmap %v\nmaster %+v",
					ml.link.ID, e, res.Actions, md.f.positions, md.f.ticketMap, ml.master.Positions)
			}
			if rapid.Bool().Draw(t, "thenLost") {
				// The repair's writes are lost too: the next repair ends where it would
				// have with them.
				md.stats.lost.Add(1)
				md.apply(t, li, res, true, -1, false)
				md.compareRepair(t, "lost writes of the plan after an entry of unknown ratio")
				return
			}
		}
	case 8: // the operator changes the link's settings
		ml.link.Settings = genModelSettings(t)
	case 9: // time passes; equity moves
		md.now = md.now.Add(time.Duration(rapid.IntRange(1, 90).Draw(t, "elapsed")) * time.Second)
		md.info.Equity = md.info.Balance * rapid.Float64Range(0.5, 1.5).Draw(t, "equity")
	default: // the user closes a manual trade
		if i := slices.IndexFunc(md.f.positions, func(p broker.Position) bool { return p.Magic == 77 }); i >= 0 {
			md.f.positions = slices.Delete(md.f.positions, i, i+1)
		}
	}
	md.reconcile(t)
	md.truth = slices.Clone(md.f.ticketMap)
}

// TestPlannerModel runs random histories against the model (see the top of the file).
func TestPlannerModel(t *testing.T) {
	var stats modelStats
	rapid.Check(t, func(t *rapid.T) {
		md := genModel(t, &stats)
		stats.histories.Add(1)
		if md.mode == broker.Netting {
			stats.netting.Add(1)
		}
		for range rapid.IntRange(1, 30).Draw(t, "steps") {
			stats.steps.Add(1)
			md.step(t)
			md.check(t)
		}
	})
	t.Logf("%d histories (%d netting), %d steps, %d orders planned, %d lost-write steps, %d unknown outcomes, %d entries made of unknown ratio, %d rejected orders, %d opens sent twice, %d repairs explained by user closes, %d repairs of unmarked positions not compared",
		stats.histories.Load(), stats.netting.Load(), stats.steps.Load(), stats.actions.Load(), stats.lost.Load(), stats.unknown.Load(), stats.unknownRatios.Load(),
		stats.rejected.Load(), stats.resent.Load(), stats.userClosedRepairs.Load(), stats.unmarked.Load())
}

// readmeVolume is a new copy's volume of master position m by README.md's sizing section
// (the model's master and follower symbols have one contract size, so no alignment), or
// false when the README says it is not copied.
func (md *model) readmeVolume(s Settings, m broker.Position, master broker.AccountInfo) (float64, bool) {
	spec := md.specs[m.Symbol]
	side, masterSL := m.Side, m.SL
	if s.Reverse { // the master's take-profit is the reversed copy's stop-loss
		side, masterSL = side.Opposite(), m.TP
	}
	price := spec.Bid
	if side == broker.Buy {
		price = spec.Ask
	}
	var v float64
	switch s.Sizing.Mode {
	case SizeFixedLot:
		v = s.Sizing.FixedLot
	case SizeLotMultiplier:
		v = m.Volume * s.Sizing.Multiplier
	case SizeEquityRatio:
		v = m.Volume * md.info.Equity / master.Equity * s.Sizing.Multiplier
	case SizeRiskPercent:
		// The stop is the one the copy carries (per stops), or the master's when the copy
		// carries none; without a stop it is not copied.
		copySL := 0.0
		switch s.Stops.Mode {
		case StopsCopy:
			copySL = masterSL
		case StopsFixed:
			if s.Stops.SLPoints > 0 {
				copySL = roundPrice(price-float64(side)*s.Stops.SLPoints*spec.Point, spec)
			}
		}
		dist := math.Abs(price - copySL)
		if copySL == 0 {
			dist = math.Abs(m.OpenPrice - m.SL)
		}
		if copySL == 0 && m.SL == 0 {
			return 0, false
		}
		v = md.info.Equity * s.Sizing.RiskPercent / 100 / (dist * spec.ContractSize)
	default:
		panic("sizing mode not in the model")
	}
	hi := spec.MaxLot
	if s.Sizing.MaxLot > 0 {
		hi = math.Min(hi, s.Sizing.MaxLot)
	}
	lo := minOnStep(spec, s)
	v = RoundDownToStep(math.Min(v, hi), spec.LotStep)
	if v < lo {
		if !s.Sizing.ForceMin {
			return 0, false
		}
		v = lo
	}
	// README, limits: when max_lots_per_symbol is below the minimum the copy is skipped
	// (whatever force_min says); the limit counts in whole lot steps.
	if l := s.Limits.MaxLotsPerSymbol; l > 0 && RoundDownToStep(l, spec.LotStep) < lo {
		return 0, false
	}
	return v, true
}

// minOnStep is the smallest volume of a copy on spec: the larger of the symbol's minimum
// and min_lot, on the lot step (0.05 on a 0.1 step is 0.1).
func minOnStep(spec broker.SymbolSpec, s Settings) float64 {
	lo := math.Max(spec.MinLot, s.Sizing.MinLot)
	return lots(math.Ceil(lo/spec.LotStep-1e-9) * spec.LotStep)
}

// checkSizing: every new copy a plan makes has the README's volume (hedging: an open,
// possibly reduced to the room max_lots_per_symbol leaves; netting: the ratio of a new
// master position it tracks).
func (md *model) checkSizing(t *rapid.T, i int, in Input, res Result) {
	ml := md.links[i]
	s := ml.link.Settings
	known := map[int64]bool{}
	for _, e := range in.TicketMap {
		if e.LinkID == ml.link.ID {
			known[e.MasterTicket] = true
		}
	}
	for _, p := range in.Follower.Positions {
		if mt, ok := ParseMarker(p.Comment); ok && p.Magic == ml.link.Magic {
			known[mt] = true // adopted: sized from the position, not anew
		}
	}
	check := func(mt int64, got float64, what string) {
		m, open := findPos(in.Master.Positions, mt)
		if !open || known[mt] {
			return
		}
		want, ok := md.readmeVolume(s, m, in.Master.Info)
		limited := s.Limits.MaxLotsPerSymbol > 0 && md.mode == broker.Hedging && got < want
		if !ok || (math.Abs(got-want) > 1e-9 && !limited) {
			t.Fatalf("link %d: %s of master %+v: %v lots, README sizing says %v (copied %v)\nsettings %+v\nfollower equity %v",
				ml.link.ID, what, m, got, want, ok, s, md.info.Equity)
		}
	}
	for _, a := range res.Actions {
		if md.mode == broker.Hedging && a.Kind == Open {
			check(a.MasterTicket, a.Volume, "open")
		}
		if md.mode == broker.Netting {
			for _, tr := range a.Track {
				if m, ok := findPos(in.Master.Positions, tr.MasterTicket); ok {
					check(tr.MasterTicket, lots(tr.Ratio*m.Volume), "share")
				}
			}
		}
	}
	if md.mode == broker.Netting {
		for _, e := range res.Track {
			if m, ok := findPos(in.Master.Positions, e.MasterTicket); ok {
				check(e.MasterTicket, lots(e.Volume*m.Volume), "share")
			}
		}
	}
}
