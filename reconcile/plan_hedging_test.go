package reconcile

import (
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/snapcopier/copier/broker"
)

func TestPlanOpensMissingCopy(t *testing.T) {
	in := testInput(broker.Hedging)
	m := mpos(501, "EURUSD", broker.Buy, 0.4, 5*time.Second)
	m.SL, m.TP = 1.09500, 1.11000
	in.Master.Positions = []broker.Position{m}
	res := Plan(in)
	want := Action{Kind: Open, Reason: ReasonCopyMissing, MasterTicket: 501, Symbol: "EURUSD", Side: broker.Buy,
		Volume: 0.4, SL: 1.09500, TP: 1.11000, Magic: 1001, Comment: "mc501", Price: 1.10010,
		Track: []Tracked{{MasterTicket: 501, Ratio: 1}}}
	if len(res.Actions) != 1 || !reflect.DeepEqual(res.Actions[0], want) {
		t.Fatalf("actions %v, want [%v]", res.Actions, want)
	}
}

func TestPlanOpenChecks(t *testing.T) {
	cases := []struct {
		name   string
		edit   func(*Input, *broker.Position)
		reason SkipReason
	}{
		{"too old", func(in *Input, m *broker.Position) { m.OpenTime = now().Add(-61 * time.Second) }, SkipTooOld},
		{"open time unknown", func(in *Input, m *broker.Position) { m.OpenTime = time.Time{} }, SkipTooOld},
		{"price deviation", func(in *Input, m *broker.Position) {
			// buy copy at Ask 1.10010, master opened at 1.09970: 40 points > 30
			in.Link.Settings.Window.MaxDeviationPoints = 30
			m.OpenPrice = 1.09970
		}, SkipPriceDeviation},
		{"symbol missing", func(in *Input, m *broker.Position) { m.Symbol = "BTCUSD" }, SkipSymbolNotFound},
		{"trade disabled", func(in *Input, m *broker.Position) {
			s := in.Follower.Symbols["EURUSD"]
			s.TradeAllowed = false
			in.Follower.Symbols["EURUSD"] = s
		}, SkipTradeDisabled},
		{"symbol excluded", func(in *Input, m *broker.Position) { in.Link.Settings.Filters.ExcludeSymbols = []string{"eurusd"} }, SkipFilteredSymbol},
		{"symbol not included", func(in *Input, m *broker.Position) { in.Link.Settings.Filters.IncludeSymbols = []string{"GBPUSD"} }, SkipFilteredSymbol},
		{"side", func(in *Input, m *broker.Position) { in.Link.Settings.Filters.Sides = SellOnly }, SkipFilteredSide},
		{"magic not in range", func(in *Input, m *broker.Position) {
			in.Link.Settings.Filters.Magics = []MagicRange{{1010, 1019}}
			m.Magic = 1020
		}, SkipFilteredMagic},
		{"magic excluded", func(in *Input, m *broker.Position) {
			in.Link.Settings.Filters.ExcludeMagics = []MagicRange{{1010, 1019}}
			m.Magic = 1015
		}, SkipFilteredMagic},
		{"risk mode without SL", func(in *Input, m *broker.Position) {
			in.Link.Settings.Sizing = Sizing{Mode: SizeRiskPercent, RiskPercent: 1}
		}, SkipNoStopLoss},
		{"below minimum", func(in *Input, m *broker.Position) { in.Link.Settings.Sizing.Multiplier = 0.01 }, SkipVolumeBelowMin},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := testInput(broker.Hedging)
			in.Follower.Symbols = specs(fx("EURUSD"))
			m := mpos(501, "EURUSD", broker.Buy, 0.4, 5*time.Second)
			tc.edit(&in, &m)
			in.Master.Positions = []broker.Position{m}
			res := Plan(in)
			if len(res.Actions) != 0 || !reflect.DeepEqual(skipReasons(res), []SkipReason{tc.reason}) {
				t.Fatalf("actions %v, skips %v; want only skip %v", res.Actions, res.Skipped, tc.reason)
			}
		})
	}
}

func TestPlanPassingChecks(t *testing.T) {
	in := testInput(broker.Hedging)
	m := mpos(501, "EURUSD", broker.Buy, 0.4, 59*time.Second)
	m.Magic = 1015
	m.OpenPrice = 1.09990 // 20 points below the Ask 1.10010
	in.Link.Settings.Window.MaxDeviationPoints = 20
	in.Link.Settings.Filters = Filters{IncludeSymbols: []string{"EURUSD"}, Sides: BuyOnly, Magics: []MagicRange{{1010, 1019}}}
	in.Master.Positions = []broker.Position{m}
	if res := Plan(in); !reflect.DeepEqual(kinds(res), []ActionKind{Open}) {
		t.Fatalf("actions %v, skips %v", res.Actions, res.Skipped)
	}
	in.Link.Settings.Window.MaxAgeSeconds = 0 // no age limit
	in.Master.Positions[0].OpenTime = now().Add(-24 * time.Hour)
	if res := Plan(in); !reflect.DeepEqual(kinds(res), []ActionKind{Open}) {
		t.Fatalf("no age limit: actions %v, skips %v", res.Actions, res.Skipped)
	}
}

func TestPlanRiskSizingUsesStopDistance(t *testing.T) {
	in := testInput(broker.Hedging)
	in.Link.Settings.Sizing = Sizing{Mode: SizeRiskPercent, RiskPercent: 2}
	m := mpos(501, "EURUSD", broker.Sell, 1, time.Second)
	m.SL = 1.10500
	in.Master.Positions = []broker.Position{m}
	// sell copy at Bid 1.10000, SL 1.10500: 0.00500 × 100,000 = 500 per lot;
	// 2 % of 2,500 = 50 → 0.1 lots
	res := Plan(in)
	if len(res.Actions) != 1 || res.Actions[0].Volume != 0.1 {
		t.Fatalf("actions %v, skips %v", res.Actions, res.Skipped)
	}
}

func TestPlanReverse(t *testing.T) {
	in := testInput(broker.Hedging)
	in.Link.Settings.Reverse = true
	m := mpos(501, "EURUSD", broker.Buy, 0.4, time.Second)
	m.SL, m.TP = 1.09500, 1.11000
	in.Master.Positions = []broker.Position{m}
	res := Plan(in)
	if len(res.Actions) != 1 {
		t.Fatalf("actions %v", res.Actions)
	}
	a := res.Actions[0]
	if a.Side != broker.Sell || a.SL != 1.11000 || a.TP != 1.09500 || a.Price != 1.10000 {
		t.Fatalf("reversed copy %v: want a sell with SL 1.11 and TP 1.095 at the Bid", a)
	}
}

func TestReverseTwiceIsIdentity(t *testing.T) {
	s, sl, tp := Reverse(Reverse(broker.Buy, 1.1, 1.2))
	if s != broker.Buy || sl != 1.1 || tp != 1.2 {
		t.Fatalf("Reverse∘Reverse = %v %v %v", s, sl, tp)
	}
}

func TestPlanStopsPolicies(t *testing.T) {
	m := mpos(501, "EURUSD", broker.Buy, 0.4, time.Second)
	m.SL, m.TP = 1.09500, 1.11000
	cases := []struct {
		stops  Stops
		sl, tp float64
	}{
		{Stops{Mode: StopsCopy}, 1.09500, 1.11000},
		{Stops{Mode: StopsNone}, 0, 0},
		// buy at Ask 1.10010: SL 150 points below, TP 300 points above
		{Stops{Mode: StopsFixed, SLPoints: 150, TPPoints: 300}, 1.09860, 1.10310},
		{Stops{Mode: StopsFixed, TPPoints: 300}, 0, 1.10310},
	}
	for _, tc := range cases {
		in := testInput(broker.Hedging)
		in.Link.Settings.Stops = tc.stops
		in.Master.Positions = []broker.Position{m}
		res := Plan(in)
		if len(res.Actions) != 1 || res.Actions[0].SL != tc.sl || res.Actions[0].TP != tc.tp {
			t.Errorf("%v: actions %v, want SL %v TP %v", tc.stops.Mode, res.Actions, tc.sl, tc.tp)
		}
	}
}

func TestPlanClosesOrphansAndDuplicates(t *testing.T) {
	in := testInput(broker.Hedging)
	in.Master.Positions = []broker.Position{mpos(501, "EURUSD", broker.Buy, 0.4, time.Hour)}
	older := copyOf(7001, 501, "EURUSD", broker.Buy, 0.4)
	newer := copyOf(7000, 501, "EURUSD", broker.Buy, 0.4) // lower ticket, but opened later
	newer.OpenTime = older.OpenTime.Add(time.Second)
	orphan := copyOf(7002, 499, "EURUSD", broker.Sell, 0.1)
	in.Follower.Positions = []broker.Position{orphan, newer, older}
	in.TicketMap = []TicketMapEntry{{LinkID: 1, MasterTicket: 501, FollowerTicket: 7001, Volume: 1}}
	res := Plan(in)
	want := []Action{
		{Kind: Close, Reason: ReasonDuplicate, MasterTicket: 501, FollowerTicket: 7000, Symbol: "EURUSD", Side: broker.Buy, Volume: 0.4},
		{Kind: Close, Reason: ReasonMasterClosed, MasterTicket: 499, FollowerTicket: 7002, Symbol: "EURUSD", Side: broker.Sell, Volume: 0.1},
	}
	if !reflect.DeepEqual(res.Actions, want) {
		t.Fatalf("actions\n%v\nwant\n%v", res.Actions, want)
	}
	if len(res.Track) != 0 || len(res.Untrack) != 0 {
		t.Fatalf("track %v, untrack %v", res.Track, res.Untrack)
	}
}

func TestPlanPartialClose(t *testing.T) {
	cases := []struct {
		name     string
		copyVol  float64
		ratio    float64
		master   float64
		forceMin bool
		want     []Action
		skip     SkipReason
	}{
		// ratio 0.25 (0.5 lots for 2 master lots); master now 1.2 → target 0.3 → close 0.2
		{name: "proportional", copyVol: 0.5, ratio: 0.25, master: 1.2,
			want: []Action{{Kind: PartialClose, Reason: ReasonMasterReduced, Volume: 0.2}}},
		// a reduction already executed is not repeated: copy 0.3 = target 0.3
		{name: "already reduced", copyVol: 0.3, ratio: 0.25, master: 1.2},
		// target 0.25 × 0.5 = 0.125 → 0.12: close 0.18 (the copy rounds down, like sizing)
		{name: "target rounds down", copyVol: 0.3, ratio: 0.25, master: 0.5,
			want: []Action{{Kind: PartialClose, Reason: ReasonMasterReduced, Volume: 0.18}}},
		// master grew (netting master added): copies are never increased
		{name: "master grew", copyVol: 0.5, ratio: 0.25, master: 3},
		// 0.25 × 0.03 = 0.0075 < min 0.01: the remainder cannot exist, close the copy
		{name: "remainder below min", copyVol: 0.5, ratio: 0.25, master: 0.03,
			want: []Action{{Kind: Close, Reason: ReasonRemainderBelowMin, Volume: 0.5}}},
		{name: "remainder below min, force min", copyVol: 0.5, ratio: 0.25, master: 0.03, forceMin: true,
			want: []Action{{Kind: PartialClose, Reason: ReasonMasterReduced, Volume: 0.49}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := testInput(broker.Hedging)
			in.Link.Settings.Sizing.ForceMin = tc.forceMin
			in.Master.Positions = []broker.Position{mpos(501, "EURUSD", broker.Buy, tc.master, time.Hour)}
			in.Follower.Positions = []broker.Position{copyOf(7001, 501, "EURUSD", broker.Buy, tc.copyVol)}
			in.TicketMap = []TicketMapEntry{{LinkID: 1, MasterTicket: 501, FollowerTicket: 7001, Volume: tc.ratio}}
			res := Plan(in)
			for i := range tc.want {
				tc.want[i].MasterTicket, tc.want[i].FollowerTicket, tc.want[i].Symbol, tc.want[i].Side = 501, 7001, "EURUSD", broker.Buy
			}
			if len(res.Actions) != len(tc.want) || (len(tc.want) > 0 && !reflect.DeepEqual(res.Actions, tc.want)) {
				t.Fatalf("actions %v, want %v (skips %v)", res.Actions, tc.want, res.Skipped)
			}
		})
	}
}

func TestPlanReduceBelowMinLotIsSkipped(t *testing.T) {
	in := testInput(broker.Hedging)
	spec := fx("EURUSD")
	spec.MinLot = 0.1 // min 0.1, step 0.01
	in.Follower.Symbols = specs(spec)
	in.Master.Positions = []broker.Position{mpos(501, "EURUSD", broker.Buy, 0.95, time.Hour)}
	in.Follower.Positions = []broker.Position{copyOf(7001, 501, "EURUSD", broker.Buy, 1)}
	in.TicketMap = []TicketMapEntry{{LinkID: 1, MasterTicket: 501, FollowerTicket: 7001, Volume: 1}}
	res := Plan(in)
	if len(res.Actions) != 0 || !slices.Contains(skipReasons(res), SkipAdjustBelowMin) {
		t.Fatalf("actions %v, skips %v", res.Actions, res.Skipped)
	}
}

func TestPlanFixesStopsWithHalfPointTolerance(t *testing.T) {
	m := mpos(501, "EURUSD", broker.Buy, 0.4, time.Hour)
	m.SL, m.TP = 1.09500, 1.11000
	for _, tc := range []struct {
		sl, tp float64
		modify bool
	}{
		{1.09500, 1.11000, false},
		{1.095004, 1.109996, false}, // 0.4 point off
		{1.095006, 1.11000, true},   // 0.6 point off
		{0, 1.11000, true},
		{1.09500, 0, true},
	} {
		in := testInput(broker.Hedging)
		in.Master.Positions = []broker.Position{m}
		c := copyOf(7001, 501, "EURUSD", broker.Buy, 0.4)
		c.SL, c.TP = tc.sl, tc.tp
		in.Follower.Positions = []broker.Position{c}
		in.TicketMap = []TicketMapEntry{{LinkID: 1, MasterTicket: 501, FollowerTicket: 7001, Volume: 1}}
		res := Plan(in)
		want := []ActionKind{}
		if tc.modify {
			want = []ActionKind{Modify}
		}
		if !reflect.DeepEqual(kinds(res), want) {
			t.Errorf("copy SL %v TP %v: actions %v", tc.sl, tc.tp, res.Actions)
		} else if tc.modify && (res.Actions[0].SL != 1.095 || res.Actions[0].TP != 1.11) {
			t.Errorf("modify %v", res.Actions[0])
		}
	}
}

// TestPlanCommentOverwritten: a copy whose comment the server replaced is matched through
// the ticket map, managed as a copy, and not opened again.
func TestPlanCommentOverwritten(t *testing.T) {
	for _, comment := range []string{"[sl]", "from #7001", "", "mc999"} {
		in := testInput(broker.Hedging)
		m := mpos(501, "EURUSD", broker.Buy, 0.2, time.Second)
		in.Master.Positions = []broker.Position{m}
		c := copyOf(7001, 501, "EURUSD", broker.Buy, 0.4)
		c.Comment = comment
		in.Follower.Positions = []broker.Position{c}
		in.TicketMap = []TicketMapEntry{{LinkID: 1, MasterTicket: 501, FollowerTicket: 7001, Volume: 2}}
		res := Plan(in)
		if !reflect.DeepEqual(kinds(res), []ActionKind{}) || len(res.Skipped) != 0 || !res.Converged() {
			t.Errorf("comment %q: actions %v, skips %v, track %v", comment, res.Actions, res.Skipped, res.Track)
		}
		// the master is closed: the copy is closed as an orphan through the map
		in.Master.Positions = nil
		res = Plan(in)
		if len(res.Actions) != 1 || res.Actions[0].Kind != Close || res.Actions[0].FollowerTicket != 7001 {
			t.Errorf("comment %q, master closed: actions %v", comment, res.Actions)
		}
	}
}

func TestPlanUnidentifiedPositionIsLeftAlone(t *testing.T) {
	in := testInput(broker.Hedging)
	c := copyOf(7001, 501, "EURUSD", broker.Buy, 0.4)
	c.Comment = "[sl]"
	in.Follower.Positions = []broker.Position{c}
	res := Plan(in)
	if len(res.Actions) != 0 || !reflect.DeepEqual(skipReasons(res), []SkipReason{SkipUnidentified}) {
		t.Fatalf("actions %v, skips %v", res.Actions, res.Skipped)
	}
}

// TestPlanDoesNotReopenClosedCopy: a copy closed on the follower while its master is open
// leaves a tombstone entry; the master ticket is not copied again, and the entry is
// released once the master closes.
func TestPlanDoesNotReopenClosedCopy(t *testing.T) {
	in := testInput(broker.Hedging)
	in.Master.Positions = []broker.Position{mpos(501, "EURUSD", broker.Buy, 0.4, time.Second)}
	in.TicketMap = []TicketMapEntry{{LinkID: 1, MasterTicket: 501, FollowerTicket: 7001, Volume: 1}}
	res := Plan(in)
	if !res.Converged() || !reflect.DeepEqual(skipReasons(res), []SkipReason{SkipCopyClosed}) {
		t.Fatalf("actions %v, skips %v", res.Actions, res.Skipped)
	}
	in.Master.Positions = nil
	res = Plan(in)
	if len(res.Actions) != 0 || !reflect.DeepEqual(res.Untrack, in.TicketMap) {
		t.Fatalf("master closed: actions %v, untrack %v", res.Actions, res.Untrack)
	}
}

func TestPlanAdoptsMarkedCopy(t *testing.T) {
	in := testInput(broker.Hedging)
	in.Master.Positions = []broker.Position{mpos(501, "EURUSD", broker.Buy, 0.8, time.Hour)}
	in.Follower.Positions = []broker.Position{copyOf(7001, 501, "EURUSD", broker.Buy, 0.2)}
	res := Plan(in)
	want := []TicketMapEntry{{LinkID: 1, MasterTicket: 501, FollowerTicket: 7001, Volume: 0.25}}
	if len(res.Actions) != 0 || !reflect.DeepEqual(res.Track, want) {
		t.Fatalf("actions %v, track %v; want track %v", res.Actions, res.Track, want)
	}
}

func TestPlanRepointsEntryToKeptCopy(t *testing.T) {
	in := testInput(broker.Hedging)
	in.Master.Positions = []broker.Position{mpos(501, "EURUSD", broker.Buy, 0.4, time.Hour)}
	older := copyOf(7001, 501, "EURUSD", broker.Buy, 0.4)
	newer := copyOf(7002, 501, "EURUSD", broker.Buy, 0.4)
	newer.OpenTime = older.OpenTime.Add(time.Second)
	in.Follower.Positions = []broker.Position{older, newer}
	in.TicketMap = []TicketMapEntry{{LinkID: 1, MasterTicket: 501, FollowerTicket: 7002, Volume: 1}}
	res := Plan(in)
	if len(res.Actions) != 1 || res.Actions[0].FollowerTicket != 7002 || res.Actions[0].Reason != ReasonDuplicate {
		t.Fatalf("actions %v", res.Actions)
	}
	want := []TicketMapEntry{{LinkID: 1, MasterTicket: 501, FollowerTicket: 7001, Volume: 1}}
	if !reflect.DeepEqual(res.Track, want) {
		t.Fatalf("track %v, want %v", res.Track, want)
	}
}

func TestPlanNeverTouchesOtherPositions(t *testing.T) {
	in := testInput(broker.Hedging)
	manual := broker.Position{Ticket: 8001, Symbol: "EURUSD", Side: broker.Buy, Volume: 1, Comment: "mc501"}
	other := copyOf(8002, 777, "EURUSD", broker.Sell, 0.3)
	other.Magic = 2002
	in.Follower.Positions = []broker.Position{manual, other}
	// an entry that points at a position of another magic does not make it ours
	in.TicketMap = []TicketMapEntry{{LinkID: 1, MasterTicket: 501, FollowerTicket: 8002, Volume: 1}}
	in.Master.Positions = []broker.Position{mpos(501, "EURUSD", broker.Buy, 0.4, time.Hour)}
	res := Plan(in)
	for _, a := range res.Actions {
		t.Errorf("unexpected action %v", a)
	}
}

func TestPlanLimits(t *testing.T) {
	in := testInput(broker.Hedging)
	in.Link.Settings.Limits = Limits{MaxOpenCopies: 3, MaxLotsPerSymbol: 1}
	in.Master.Positions = []broker.Position{
		mpos(501, "EURUSD", broker.Buy, 0.5, 4*time.Second),
		mpos(502, "EURUSD", broker.Buy, 0.7, 3*time.Second), // 0.5 lots left under the 1-lot cap
		mpos(503, "EURUSD", broker.Sell, 0.2, 2*time.Second),
		mpos(504, "GER40", broker.Buy, 10, time.Second), // 10 × 10 / 100 = 1 lot
	}
	res := Plan(in)
	var got []string
	for _, a := range res.Actions {
		got = append(got, a.Comment+":"+strconv.FormatFloat(a.Volume, 'f', -1, 64))
	}
	if want := []string{"mc501:0.5", "mc502:0.5", "mc504:1"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("opens %v, want %v (skips %v)", got, want, res.Skipped)
	}
	if !reflect.DeepEqual(skipReasons(res), []SkipReason{SkipMaxLotsPerSymbol}) {
		t.Fatalf("skips %v", res.Skipped)
	}
	in.Link.Settings.Limits.MaxLotsPerSymbol = 0
	res = Plan(in)
	if len(res.Actions) != 3 || !reflect.DeepEqual(skipReasons(res), []SkipReason{SkipMaxOpenCopies}) || res.Skipped[0].MasterTicket != 504 {
		t.Fatalf("actions %v, skips %v", res.Actions, res.Skipped)
	}
}

func TestPlanSymbolMapAndAlignment(t *testing.T) {
	in := testInput(broker.Hedging)
	in.Follower.Symbols = specs(fx("EURUSD.m"), index("DE40", 100))
	in.Link.Settings.Symbols = SymbolMap{FollowerSuffix: ".m", Pairs: map[string]string{"GER40": "DE40"}}
	in.Master.Positions = []broker.Position{
		mpos(501, "EURUSD", broker.Buy, 0.3, time.Second),
		mpos(502, "GER40", broker.Sell, 5, time.Second), // 5 × 10 / 100 = 0.5 lots of DE40
	}
	res := Plan(in)
	if len(res.Actions) != 2 || res.Actions[0].Symbol != "EURUSD.m" || res.Actions[1].Symbol != "DE40" || res.Actions[1].Volume != 0.5 {
		t.Fatalf("actions %v", res.Actions)
	}
}

func TestPlanInvalidLinkPlansNothing(t *testing.T) {
	in := testInput(broker.Hedging)
	in.Master.Positions = []broker.Position{mpos(501, "EURUSD", broker.Buy, 0.3, time.Second)}
	in.Follower.Positions = []broker.Position{{Ticket: 9, Symbol: "EURUSD", Side: broker.Buy, Volume: 1}}
	for name, edit := range map[string]func(*Input){
		"magic 0":          func(in *Input) { in.Link.Magic = 0 },
		"invalid settings": func(in *Input) { in.Link.Settings.Sizing.Multiplier = -1 },
		"unknown mode":     func(in *Input) { in.Follower.Info.Mode = 0 },
	} {
		c := in
		c.Link.Settings = DefaultSettings()
		c.Follower.Info.Mode = broker.Hedging
		edit(&c)
		res := Plan(c)
		if len(res.Actions) != 0 || len(res.Skipped) != 1 {
			t.Errorf("%s: %v %v", name, res.Actions, res.Skipped)
		}
	}
}

func TestPlanOrderIsDeterministic(t *testing.T) {
	in := testInput(broker.Hedging)
	in.Master.Positions = []broker.Position{
		mpos(503, "EURUSD", broker.Buy, 0.3, 1*time.Second),
		mpos(501, "EURUSD", broker.Buy, 0.3, 3*time.Second),
		mpos(502, "EURUSD", broker.Sell, 0.5, 2*time.Second),
		mpos(504, "EURUSD", broker.Sell, 0.5, 50*time.Second),
	}
	in.Follower.Positions = []broker.Position{copyOf(7003, 400, "EURUSD", broker.Buy, 0.1), copyOf(7004, 504, "EURUSD", broker.Sell, 0.5)}
	in.Follower.Positions[1].SL = 1.2
	res := Plan(in)
	var got []string
	for _, a := range res.Actions {
		got = append(got, a.Kind.String()+":"+Marker(a.MasterTicket))
	}
	want := []string{"close:mc400", "modify:mc504", "open:mc501", "open:mc502", "open:mc503"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
	slices.Reverse(in.Master.Positions)
	slices.Reverse(in.Follower.Positions)
	if again := Plan(in); !reflect.DeepEqual(again, res) {
		t.Fatalf("input order changed the plan:\n%v\n%v", again, res)
	}
}

// TestValidatedLinkSkipsOnlyItsOwnValidation: a plan refuses a link with invalid settings
// (SkipInvalidLink), and Validated refuses to mark one; a link marked by Validated plans
// without validating again.
func TestValidatedLinkSkipsOnlyItsOwnValidation(t *testing.T) {
	in := testInput(broker.Hedging)
	in.Master.Positions = []broker.Position{mpos(501, "EURUSD", broker.Buy, 0.4, 5*time.Second)}
	bad := in
	bad.Link.Settings.Sizing.Multiplier = -1
	if res := Plan(bad); len(res.Actions) != 0 || !slices.Contains(skipReasons(res), SkipInvalidLink) {
		t.Fatalf("invalid settings planned: %+v", res)
	}
	if _, err := bad.Link.Validated(); err == nil {
		t.Fatal("Validated accepted invalid settings")
	}
	good, err := in.Link.Validated()
	if err != nil {
		t.Fatal(err)
	}
	in.Link = good
	if res := Plan(in); len(res.Actions) != 1 || res.Actions[0].Kind != Open {
		t.Fatalf("a validated link did not plan its copy: %+v", res)
	}
}

// TestPlanReadsMastersInAnyOrderWithoutChangingThem: the master's positions may come
// unsorted and with a ticket twice (the oldest counts); the plan is the same as for the
// sorted, deduplicated list, and the caller's slice is never reordered or changed.
func TestPlanReadsMastersInAnyOrderWithoutChangingThem(t *testing.T) {
	a := mpos(501, "EURUSD", broker.Buy, 0.4, 9*time.Second)
	b := mpos(502, "EURUSD", broker.Sell, 0.2, 5*time.Second)
	c := mpos(503, "EURUSD", broker.Buy, 0.1, 2*time.Second)
	late := b
	late.OpenTime, late.Volume = b.OpenTime.Add(time.Second), 0.9 // 502 again, younger

	clean := testInput(broker.Hedging)
	clean.Master.Positions = []broker.Position{a, b, c}
	want := Plan(clean)
	if len(want.Actions) != 3 {
		t.Fatalf("clean plan %v, want three opens", want.Actions)
	}
	for _, order := range [][]broker.Position{{c, a, b}, {a, b, late, c}, {a, late, b, c}, {late, c, b, a}} {
		in := testInput(broker.Hedging)
		in.Master.Positions = slices.Clone(order)
		if got := Plan(in); !reflect.DeepEqual(got, want) {
			t.Errorf("masters %v: plan %v, want %v", tickets(order), got.Actions, want.Actions)
		}
		if !reflect.DeepEqual(in.Master.Positions, order) {
			t.Errorf("masters %v changed to %v", tickets(order), tickets(in.Master.Positions))
		}
	}
}

func tickets(ps []broker.Position) []int64 {
	out := make([]int64, len(ps))
	for i, p := range ps {
		out[i] = p.Ticket
	}
	return out
}

// TestPlanIndexesManyMasters: above linearMasters the plan finds masters through a map;
// the result is the same as for the clean, sorted set, whatever the order and however
// often a ticket repeats (the oldest position of a ticket is the one copied).
func TestPlanIndexesManyMasters(t *testing.T) {
	for _, n := range []int{linearMasters - 1, linearMasters, linearMasters + 1, 3 * linearMasters} {
		var clean []broker.Position
		for i := range n {
			clean = append(clean, mpos(int64(600+i), "EURUSD", broker.Buy, 0.01*float64(i+1), time.Duration(n-i)*time.Second))
		}
		in := testInput(broker.Hedging)
		in.Master.Positions = clean
		want := Plan(in)
		if len(want.Actions) != n {
			t.Fatalf("%d masters: clean plan has %d actions", n, len(want.Actions))
		}
		mixed := slices.Clone(clean)
		for i := 0; i < n; i += 3 { // every third ticket again, younger and larger
			again := clean[i]
			again.OpenTime, again.Volume = again.OpenTime.Add(time.Millisecond), 5
			mixed = append(mixed, again)
		}
		slices.Reverse(mixed)
		in = testInput(broker.Hedging)
		in.Master.Positions = slices.Clone(mixed)
		if got := Plan(in); !reflect.DeepEqual(got, want) {
			t.Errorf("%d masters with repeats, reversed: plan %v, want %v", n, got.Actions, want.Actions)
		}
		if !reflect.DeepEqual(in.Master.Positions, mixed) {
			t.Errorf("%d masters: the caller's slice changed", n)
		}
	}
}
