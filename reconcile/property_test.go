package reconcile

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/reconcile/protect"
)

// world is a follower account with several links from several masters, for property tests.
type world struct {
	mode   broker.AccountMode
	f      *follower
	info   broker.AccountInfo
	specs  map[string]broker.SymbolSpec
	links  []*linkWorld
	now    time.Time
	prices map[string]float64 // base symbol → mid price
}

// linkWorld is one link and its master account.
type linkWorld struct {
	link       Link
	master     AccountState
	masterSfx  string
	nextTicket int64
}

// masterBase is the base name of a master symbol.
func (lw *linkWorld) masterBase(symbol string) string {
	return strings.TrimSuffix(symbol, lw.masterSfx)
}

// bases are the instruments of the world: master base name → follower base name.
func bases() []string { return []string{"EURUSD", "GBPUSD", "GER40"} }

func pointOf(base string) float64 {
	if base == "GER40" {
		return 0.1
	}
	return 0.00001
}

func genWorld(t *rapid.T) *world {
	w := &world{
		mode:   rapid.SampledFrom([]broker.AccountMode{broker.Hedging, broker.Netting}).Draw(t, "mode"),
		now:    now(),
		specs:  map[string]broker.SymbolSpec{},
		prices: map[string]float64{"EURUSD": 1.1, "GBPUSD": 1.25, "GER40": 18000},
	}
	w.f = &follower{mode: w.mode}
	w.info = broker.AccountInfo{Login: "f", Balance: rapid.Float64Range(100, 100_000).Draw(t, "fBalance"), Mode: w.mode}
	w.info.Equity = w.info.Balance * rapid.Float64Range(0.5, 1.5).Draw(t, "fEquity")
	fsfx := rapid.SampledFrom([]string{"", ".m"}).Draw(t, "followerSuffix")
	for _, b := range bases() {
		name := b + fsfx
		spec := fx(name)
		if b == "GER40" {
			name = "DE40"
			spec = index(name, rapid.SampledFrom([]float64{1, 10, 100}).Draw(t, "de40Contract"))
		} else {
			spec.MinLot = rapid.SampledFrom([]float64{0.01, 0.1}).Draw(t, "minLot "+b)
			spec.LotStep = rapid.SampledFrom([]float64{0.01, 0.1}).Draw(t, "lotStep "+b)
			if spec.LotStep > spec.MinLot {
				spec.MinLot = spec.LotStep
			}
			spec.MaxLot = rapid.SampledFrom([]float64{2, 100}).Draw(t, "maxLot "+b)
			if b == "GBPUSD" {
				spec.Bid, spec.Ask = 1.25, 1.25020
			}
		}
		spec.TradeAllowed = rapid.IntRange(0, 9).Draw(t, "tradeAllowed "+b) > 0
		w.specs[name] = spec
	}
	n := rapid.IntRange(1, 3).Draw(t, "links")
	for i := range n {
		lw := &linkWorld{nextTicket: 500, masterSfx: rapid.SampledFrom([]string{"", ".pro"}).Draw(t, "masterSuffix")}
		lw.link = Link{ID: int64(i + 1), Magic: int64(1001 + i), Settings: genSettings(t, fsfx, lw.masterSfx)}
		lw.master.Info = broker.AccountInfo{Login: fmt.Sprintf("m%d", i), Balance: rapid.Float64Range(100, 100_000).Draw(t, "mBalance")}
		lw.master.Info.Equity = lw.master.Info.Balance
		lw.master.Symbols = map[string]broker.SymbolSpec{}
		for _, b := range bases() {
			spec := fx(b + lw.masterSfx)
			if b == "GER40" {
				spec = index(b+lw.masterSfx, 10)
				spec.MinLot, spec.LotStep = 0.01, 0.01
			}
			lw.master.Symbols[spec.Name] = spec
		}
		w.links = append(w.links, lw)
	}
	return w
}

func genSettings(t *rapid.T, followerSfx, masterSfx string) Settings {
	s := DefaultSettings()
	s.Symbols = SymbolMap{MasterSuffix: masterSfx, FollowerSuffix: followerSfx, Pairs: map[string]string{"GER40": "DE40"}}
	s.Sizing.Mode = SizingMode(rapid.IntRange(int(SizeFixedLot), int(SizeRiskPercent)).Draw(t, "sizing"))
	s.Sizing.FixedLot = rapid.SampledFrom([]float64{0.01, 0.1, 0.37, 2}).Draw(t, "fixedLot")
	s.Sizing.Multiplier = rapid.SampledFrom([]float64{0.1, 0.5, 1, 3}).Draw(t, "multiplier")
	s.Sizing.RiskPercent = rapid.SampledFrom([]float64{0.5, 1, 5}).Draw(t, "riskPercent")
	s.Sizing.AlignContractSize = rapid.Bool().Draw(t, "align")
	s.Sizing.MinLot = rapid.SampledFrom([]float64{0, 0, 0.05}).Draw(t, "sMinLot")
	s.Sizing.MaxLot = rapid.SampledFrom([]float64{0, 0, 1.5}).Draw(t, "sMaxLot")
	s.Sizing.ForceMin = rapid.Bool().Draw(t, "forceMin")
	s.Reverse = rapid.Bool().Draw(t, "reverse")
	s.Filters.Sides = SideFilter(rapid.IntRange(0, 4).Draw(t, "sides") % 3)
	if rapid.IntRange(0, 3).Draw(t, "excludeGBP") == 0 {
		s.Filters.ExcludeSymbols = []string{"GBPUSD"}
	}
	if rapid.IntRange(0, 3).Draw(t, "magicFilter") == 0 {
		s.Filters.Magics = []MagicRange{{0, 0}, {1010, 1019}}
	}
	s.Stops.Mode = StopsMode(rapid.IntRange(int(StopsCopy), int(StopsFixed)).Draw(t, "stops"))
	if s.Stops.Mode == StopsFixed {
		s.Stops.SLPoints = rapid.SampledFrom([]float64{0, 150}).Draw(t, "slPoints")
		s.Stops.TPPoints = rapid.SampledFrom([]float64{300, 0}).Draw(t, "tpPoints")
		if s.Stops.SLPoints == 0 && s.Stops.TPPoints == 0 {
			s.Stops.TPPoints = 300
		}
	}
	s.Limits.MaxOpenCopies = rapid.SampledFrom([]int{0, 0, 3}).Draw(t, "maxOpenCopies")
	s.Limits.MaxLotsPerSymbol = rapid.SampledFrom([]float64{0, 0, 1}).Draw(t, "maxLotsPerSymbol")
	s.Window.MaxAgeSeconds = rapid.SampledFrom([]int{60, 0, 10}).Draw(t, "maxAge")
	s.Window.MaxDeviationPoints = rapid.SampledFrom([]float64{0, 50}).Draw(t, "maxDeviation")
	if err := s.Validate(); err != nil {
		t.Fatalf("generated invalid settings: %v", err)
	}
	return s
}

// input is the planner's view of link i.
func (w *world) input(i int) Input {
	lw := w.links[i]
	return Input{
		Master:    lw.master,
		Follower:  AccountState{Info: w.info, Positions: slices.Clone(w.f.positions), Symbols: w.specs},
		Link:      lw.link,
		TicketMap: slices.Clone(w.f.ticketMap),
		Now:       w.now,
	}
}

// limited reports whether link i has limits (the event path may then leave work to the
// reconcile: a slot freed by a close is filled by the next reconcile).
func (w *world) limited(i int) bool {
	l := w.links[i].link.Settings.Limits
	return l.MaxOpenCopies > 0 || l.MaxLotsPerSymbol > 0
}

// genMasterPosition draws a new master position of link lw.
func (w *world) genMasterPosition(t *rapid.T, lw *linkWorld) broker.Position {
	base := rapid.SampledFrom(bases()).Draw(t, "symbol")
	side := rapid.SampledFrom([]broker.Side{broker.Buy, broker.Sell}).Draw(t, "side")
	pt := pointOf(base)
	price := w.prices[base] + float64(rapid.IntRange(-60, 60).Draw(t, "pricePoints"))*pt
	lw.nextTicket += int64(rapid.IntRange(1, 3).Draw(t, "ticketGap"))
	p := broker.Position{
		Ticket:    lw.nextTicket,
		Symbol:    base + lw.masterSfx,
		Side:      side,
		Volume:    float64(rapid.IntRange(1, 300).Draw(t, "volumeCents")) / 100,
		OpenPrice: price,
		Magic:     rapid.SampledFrom([]int64{0, 1012, 77}).Draw(t, "masterMagic"),
		OpenTime:  w.now.Add(-time.Duration(rapid.IntRange(0, 90).Draw(t, "age")) * time.Second),
	}
	if rapid.Bool().Draw(t, "hasSL") {
		p.SL = roundTo(price-float64(side)*float64(rapid.IntRange(50, 500).Draw(t, "slPoints"))*pt, pt)
	}
	if rapid.Bool().Draw(t, "hasTP") {
		p.TP = roundTo(price+float64(side)*float64(rapid.IntRange(50, 500).Draw(t, "tpPoints"))*pt, pt)
	}
	return p
}

func roundTo(v, pt float64) float64 { return math.Round(v/pt) * pt }

// step changes the world at random. It returns the master event it made, if any, and the
// index of its link.
func (w *world) step(t *rapid.T) (broker.Event, int, bool) {
	li := rapid.IntRange(0, len(w.links)-1).Draw(t, "link")
	lw := w.links[li]
	mps := lw.master.Positions
	pickMaster := func() (int, bool) {
		if len(mps) == 0 {
			return 0, false
		}
		return rapid.IntRange(0, len(mps)-1).Draw(t, "masterPos"), true
	}
	pickFollower := func() (int, bool) {
		if len(w.f.positions) == 0 {
			return 0, false
		}
		return rapid.IntRange(0, len(w.f.positions)-1).Draw(t, "followerPos"), true
	}
	event := func(kind broker.EventKind, p broker.Position) (broker.Event, int, bool) {
		return broker.Event{Login: lw.master.Info.Login, Kind: kind, Position: p, ServerTime: w.now}, li, true
	}
	switch rapid.IntRange(0, 12).Draw(t, "step") {
	case 11, 12: // a master opens, and then
		lw.master.Positions = append(slices.Clone(mps), w.genMasterPosition(t, lw))
		if rapid.Bool().Draw(t, "crash") {
			// the engine crashes after sending the plan's orders: its ticket map writes are lost
			w.f.executeLost(Plan(w.input(li)), w.now)
		} else {
			// a stale owner sends the plan's opens a second time
			w.f.executeTwice(lw.link.ID, Plan(w.input(li)), w.now)
		}
	case 0, 1, 2:
		p := w.genMasterPosition(t, lw)
		lw.master.Positions = append(slices.Clone(mps), p)
		return event(broker.Opened, p)
	case 3:
		if i, ok := pickMaster(); ok {
			p := mps[i]
			lw.master.Positions = slices.Delete(slices.Clone(mps), i, i+1)
			return event(broker.Closed, p)
		}
	case 4:
		if i, ok := pickMaster(); ok && mps[i].Volume > 0.01 {
			p := mps[i]
			p.Volume = float64(rapid.IntRange(1, int(math.Round(p.Volume*100))-1).Draw(t, "remainCents")) / 100
			lw.master.Positions = slices.Clone(mps)
			lw.master.Positions[i] = p
			return event(broker.PartiallyClosed, p)
		}
	case 5:
		if i, ok := pickMaster(); ok {
			p := mps[i]
			pt := pointOf(lw.masterBase(p.Symbol))
			p.SL = rapid.SampledFrom([]float64{0, roundTo(p.OpenPrice-float64(p.Side)*200*pt, pt)}).Draw(t, "newSL")
			p.TP = rapid.SampledFrom([]float64{0, roundTo(p.OpenPrice+float64(p.Side)*400*pt, pt)}).Draw(t, "newTP")
			lw.master.Positions = slices.Clone(mps)
			lw.master.Positions[i] = p
			return event(broker.Modified, p)
		}
	case 6: // the user (or a stop) closes a follower position
		if i, ok := pickFollower(); ok {
			w.f.positions = slices.Delete(w.f.positions, i, i+1)
		}
	case 7: // the user partially closes a follower position
		if i, ok := pickFollower(); ok {
			p := &w.f.positions[i]
			step := w.specs[p.Symbol].LotStep
			if n := int(math.Round(p.Volume / step)); n > 1 {
				p.Volume = lots(float64(rapid.IntRange(1, n-1).Draw(t, "userRemain")) * step)
			}
		}
	case 8: // the server overwrites a comment
		if i, ok := pickFollower(); ok {
			w.f.positions[i].Comment = rapid.SampledFrom([]string{"[sl]", "from #123", "", "mc1"}).Draw(t, "overwrite")
		}
	case 9: // a manual trade on the follower (on a netting account only on a free symbol)
		name := rapid.SampledFrom(slices.Sorted(mapsKeys(w.specs))).Draw(t, "manualSymbol")
		if w.mode == broker.Hedging || !slices.ContainsFunc(w.f.positions, func(p broker.Position) bool { return p.Symbol == name }) {
			w.f.positions = append(w.f.positions, broker.Position{Ticket: w.f.newTicket(), Symbol: name, Side: broker.Buy,
				Volume: w.specs[name].MinLot, OpenPrice: 1, Magic: rapid.SampledFrom([]int64{0, 1001}).Draw(t, "manualMagic"), OpenTime: w.now})
		}
	case 10: // time passes, quotes and equity move
		w.now = w.now.Add(time.Duration(rapid.IntRange(0, 120).Draw(t, "elapsed")) * time.Second)
		w.info.Equity = w.info.Balance * rapid.Float64Range(0.5, 1.5).Draw(t, "equity")
		for _, name := range slices.Sorted(mapsKeys(w.specs)) {
			s := w.specs[name]
			move := float64(rapid.IntRange(-30, 30).Draw(t, "quoteMove "+name)) * s.Point
			s.Bid, s.Ask = roundPrice(s.Bid+move, s), roundPrice(s.Ask+move, s)
			w.specs[name] = s
		}
	}
	return broker.Event{}, 0, false
}

func mapsKeys(m map[string]broker.SymbolSpec) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// checkPlan asserts the invariants of one plan of link i made from in.
// replan plans in again (Plan, or PlanEvent of the same event).
func checkPlan(t *rapid.T, in Input, res Result, replan func(Input) Result) {
	link := in.Link
	byTicket := map[int64]broker.Position{}
	for _, p := range in.Follower.Positions {
		byTicket[p.Ticket] = p
	}
	// copied: master tickets with a copy of this link on the follower (map or marker);
	// tombstoned: with an entry but no such copy.
	copied, entry := map[int64]bool{}, map[int64]bool{}
	for _, e := range in.TicketMap {
		if e.LinkID != link.ID {
			continue
		}
		entry[e.MasterTicket] = true
		if p, ok := byTicket[e.FollowerTicket]; ok && p.Magic == link.Magic {
			copied[e.MasterTicket] = true
		}
		if e.FollowerTicket == 0 && in.Follower.Info.Mode == broker.Netting {
			copied[e.MasterTicket] = true // carried by a flat net
		}
	}
	if in.Follower.Info.Mode == broker.Hedging {
		for _, p := range in.Follower.Positions {
			if mt, ok := ParseMarker(p.Comment); ok && p.Magic == link.Magic {
				copied[mt] = true
			}
		}
	} else {
		// A netting position carries the master its marker names and everything the map
		// carried with that master where its entry points (a lost write of the open).
		for _, p := range in.Follower.Positions {
			mt, ok := ParseMarker(p.Comment)
			if !ok || p.Magic != link.Magic {
				continue
			}
			for _, e := range in.TicketMap {
				if e.LinkID == link.ID && e.MasterTicket == mt {
					for _, o := range in.TicketMap {
						if o.LinkID == link.ID && o.FollowerTicket == e.FollowerTicket {
							copied[o.MasterTicket] = true
						}
					}
				}
			}
		}
	}
	opens := map[int64]bool{}
	openSymbols := map[string]bool{}
	for _, a := range res.Actions {
		if a.FollowerTicket != 0 {
			p, ok := byTicket[a.FollowerTicket]
			if !ok || p.Magic != link.Magic {
				t.Fatalf("link %d: %v touches position %+v (exists %v)", link.ID, a, p, ok)
			}
		}
		spec := in.Follower.Symbols[a.Symbol]
		switch a.Kind {
		case Open:
			if a.Magic != link.Magic {
				t.Fatalf("link %d opens with magic %d: %v", link.ID, a.Magic, a)
			}
			if mt, ok := ParseMarker(a.Comment); !ok || mt != a.MasterTicket {
				t.Fatalf("open comment %q for master %d", a.Comment, a.MasterTicket)
			}
			if opens[a.MasterTicket] || openSymbols[a.Symbol] && in.Follower.Info.Mode == broker.Netting {
				t.Fatalf("two opens for master %d / symbol %s: %v", a.MasterTicket, a.Symbol, res.Actions)
			}
			opens[a.MasterTicket], openSymbols[a.Symbol] = true, true
			if in.Follower.Info.Mode == broker.Hedging && (copied[a.MasterTicket] || entry[a.MasterTicket]) {
				t.Fatalf("opens master %d which is copied already (copied %v, entry %v)", a.MasterTicket, copied[a.MasterTicket], entry[a.MasterTicket])
			}
			if a.Volume < spec.MinLot-1e-9 || a.Volume > spec.MaxLot+1e-9 || !OnStep(a.Volume, spec.LotStep) {
				t.Fatalf("open volume %v outside [%v, %v] step %v", a.Volume, spec.MinLot, spec.MaxLot, spec.LotStep)
			}
			if s := link.Settings.Sizing; s.MaxLot > 0 && a.Volume > s.MaxLot+1e-9 && in.Follower.Info.Mode == broker.Hedging {
				t.Fatalf("open volume %v above max_lot %v", a.Volume, s.MaxLot)
			}
		case PartialClose:
			p := byTicket[a.FollowerTicket]
			if !OnStep(a.Volume, spec.LotStep) || a.Volume < spec.MinLot-1e-9 || p.Volume-a.Volume < spec.MinLot-1e-9 {
				t.Fatalf("partial close %v of %v (min %v, step %v)", a.Volume, p.Volume, spec.MinLot, spec.LotStep)
			}
		}
		for _, tr := range a.Track {
			if entry[tr.MasterTicket] && !copied[tr.MasterTicket] {
				t.Fatalf("action %v tracks master %d whose copy was closed", a, tr.MasterTicket)
			}
		}
	}
	for _, e := range res.Track {
		if e.LinkID != link.ID {
			t.Fatalf("track of another link: %v", e)
		}
		if entry[e.MasterTicket] && !copied[e.MasterTicket] {
			t.Fatalf("tracks master %d whose copy was closed", e.MasterTicket)
		}
		if p, ok := byTicket[e.FollowerTicket]; (!ok || p.Magic != link.Magic) && !(e.FollowerTicket == 0 && in.Follower.Info.Mode == broker.Netting) &&
			!(e.FollowerTicket == FlatTombstone && (in.Restrict == CloseCopies || in.Link.Settings.Protect.CloseOnly == protect.CloseNow)) {
			t.Fatalf("tracks %v onto position %+v", e, p)
		}
	}
	for _, e := range res.Untrack {
		if e.LinkID != link.ID {
			t.Fatalf("untrack of another link: %v", e)
		}
	}
	// The plan does not depend on the order of its input.
	shuffled := in
	shuffled.Master.Positions = rapid.Permutation(in.Master.Positions).Draw(t, "shuffleMaster")
	shuffled.Follower.Positions = rapid.Permutation(in.Follower.Positions).Draw(t, "shuffleFollower")
	shuffled.TicketMap = rapid.Permutation(in.TicketMap).Draw(t, "shuffleMap")
	if again := replan(shuffled); !reflect.DeepEqual(again, res) {
		t.Fatalf("plan depends on input order:\n%v\n%v", again, res)
	}
}

// reconcileAll plans and executes every link, checking that planning a link again right
// after executing its plan yields nothing. On a netting follower one link's close can free
// a symbol another link waits for, so the links are reconciled until none has work left
// (at most once more per link); then every link must be converged.
func reconcileAll(t *rapid.T, w *world) {
	for range len(w.links) + 1 {
		busy := false
		for i := range w.links {
			in := w.input(i)
			res := Plan(in)
			checkPlan(t, in, res, Plan)
			busy = busy || !res.Converged()
			w.f.execute(w.links[i].link.ID, res, w.now)
			checkConverged(t, w, "after its own plan", i)
		}
		if !busy {
			break
		}
	}
	checkConverged(t, w, "after reconcile")
}

// checkConverged asserts that a plan of every link asks for nothing (of the links given,
// or all).
func checkConverged(t *rapid.T, w *world, when string, only ...int) {
	for i := range w.links {
		if len(only) > 0 && !slices.Contains(only, i) {
			continue
		}
		in := w.input(i)
		res := Plan(in)
		checkPlan(t, in, res, Plan)
		if !res.Converged() {
			t.Fatalf("%s: link %d (%s) not converged:\nactions %v\ntrack %v\nuntrack %v\nfollower %+v\nmap %v\nmaster %+v",
				when, in.Link.ID, w.mode, res.Actions, res.Track, res.Untrack, w.f.positions, w.f.ticketMap, in.Master.Positions)
		}
		if w.mode == broker.Hedging {
			checkNoDuplicates(t, w, w.links[i])
		}
	}
}

// checkNoDuplicates: on a converged hedging follower no master ticket has two copies of
// one link.
func checkNoDuplicates(t *rapid.T, w *world, lw *linkWorld) {
	seen := map[int64]int64{}
	for _, p := range w.f.positions {
		if p.Magic != lw.link.Magic {
			continue
		}
		mt, ok := int64(0), false
		for _, e := range w.f.ticketMap {
			if e.LinkID == lw.link.ID && e.FollowerTicket == p.Ticket {
				mt, ok = e.MasterTicket, true
			}
		}
		if !ok {
			mt, ok = ParseMarker(p.Comment)
		}
		if !ok {
			continue
		}
		if other, dup := seen[mt]; dup {
			t.Fatalf("link %d: master %d has copies %d and %d\nfollower %+v\nmap %v", lw.link.ID, mt, other, p.Ticket, w.f.positions, w.f.ticketMap)
		}
		seen[mt] = p.Ticket
	}
}

// TestPlanProperties drives random worlds (hedging and netting followers, one to three
// links with random settings) through random master changes, follower interference
// (manual closes and trades, overwritten comments), time and quote moves, and checks after
// every plan: actions touch only the link's positions, opens carry the link's magic and
// marker, at most one open per master ticket (per symbol on netting), never an open of a
// master ticket already copied, never a re-copy of a closed copy, volumes within
// [min, max] and on the step, order independence; and after executing a plan, planning
// again yields nothing. Master changes alternate between the event path (PlanEvent) and
// the reconcile path.
func TestPlanProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		w := genWorld(t)
		reconcileAll(t, w)
		steps := rapid.IntRange(1, 25).Draw(t, "steps")
		for range steps {
			before := make([]Input, len(w.links))
			for i := range w.links {
				before[i] = w.input(i)
			}
			ev, li, isEvent := w.step(t)
			if isEvent && rapid.Bool().Draw(t, "fastPath") {
				in := before[li]
				in.Now = w.now
				res := PlanEvent(ev, in)
				checkPlan(t, in, res, func(in Input) Result { return PlanEvent(ev, in) })
				w.f.execute(w.links[li].link.ID, res, w.now)
				// On a netting follower a link's close can free a symbol that blocked
				// another link: that one catches up at its next reconcile.
				if !w.limited(li) {
					checkConverged(t, w, "after event "+ev.Kind.String(), li)
				}
			}
			reconcileAll(t, w)
		}
	})
}

// TestReverseInvolution: reversing twice gives back the side and the stops.
func TestReverseInvolution(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		side := rapid.SampledFrom([]broker.Side{broker.Buy, broker.Sell}).Draw(t, "side")
		sl := rapid.Float64Range(0, 2).Draw(t, "sl")
		tp := rapid.Float64Range(0, 2).Draw(t, "tp")
		s1, sl1, tp1 := Reverse(side, sl, tp)
		if s1 != side.Opposite() || sl1 != tp || tp1 != sl {
			t.Fatalf("Reverse(%v, %v, %v) = %v, %v, %v", side, sl, tp, s1, sl1, tp1)
		}
		if s2, sl2, tp2 := Reverse(s1, sl1, tp1); s2 != side || sl2 != sl || tp2 != tp {
			t.Fatalf("Reverse twice = %v, %v, %v", s2, sl2, tp2)
		}
	})
}
