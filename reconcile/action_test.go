package reconcile

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/snapcopier/copier/broker"
)

func TestActionMapChanges(t *testing.T) {
	track := []Tracked{{MasterTicket: 501, Ratio: 0.5}, {MasterTicket: 502, Ratio: 2}}
	cases := []struct {
		name        string
		a           Action
		result      broker.OrderResult
		wantTicket  int64
		wantUntrack bool
	}{
		{"open points at the new position", Action{Kind: Open, Track: track}, broker.OrderResult{Ticket: 9001}, 9001, false},
		{"open adding to a netting position", Action{Kind: Open, FollowerTicket: 7001, Track: track}, broker.OrderResult{Ticket: 7001}, 7001, false},
		{"partial close keeps the position", Action{Kind: PartialClose, FollowerTicket: 7001, Track: track}, broker.OrderResult{Ticket: 7001}, 7001, false},
		{"close leaves the shares flat", Action{Kind: Close, FollowerTicket: 7001, Track: track}, broker.OrderResult{Ticket: 7001}, 0, false},
		{"orphan close untracks", Action{Kind: Close, MasterTicket: 501, FollowerTicket: 7001, Untrack: true}, broker.OrderResult{Ticket: 7001}, 0, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr, un := tc.a.MapChanges(3, tc.result)
			if len(tc.a.Track) > 0 {
				want := []TicketMapEntry{{3, 501, tc.wantTicket, 0.5}, {3, 502, tc.wantTicket, 2}}
				if !reflect.DeepEqual(tr, want) {
					t.Fatalf("track %v, want %v", tr, want)
				}
			} else if tr != nil {
				t.Fatalf("track %v", tr)
			}
			if tc.wantUntrack != (len(un) == 1 && un[0] == TicketMapEntry{LinkID: 3, MasterTicket: 501, FollowerTicket: 7001}) {
				t.Fatalf("untrack %v", un)
			}
		})
	}
}

func TestActionRequests(t *testing.T) {
	o := broker.Order{RequestID: uuid.New(), Token: 7, Node: "n1"}
	open := Action{Kind: Open, Symbol: "EURUSD", Side: broker.Sell, Volume: 0.3, SL: 1.2, TP: 1.0, Magic: 1001, Comment: "mc5"}
	if got := open.OpenRequest(o); got != (broker.OpenRequest{Order: o, Symbol: "EURUSD", Side: broker.Sell, Type: broker.Market,
		Volume: 0.3, SL: 1.2, TP: 1.0, Magic: 1001, Comment: "mc5"}) {
		t.Errorf("open request %+v", got)
	}
	if got := (Action{Kind: Close, FollowerTicket: 9, Volume: 0.3}).CloseRequest(o); got.Volume != 0 || got.Ticket != 9 {
		t.Errorf("close request %+v: want the whole position", got)
	}
	if got := (Action{Kind: PartialClose, FollowerTicket: 9, Volume: 0.1}).CloseRequest(o); got.Volume != 0.1 {
		t.Errorf("partial close request %+v", got)
	}
	if got := (Action{Kind: Modify, FollowerTicket: 9, SL: 1.1}).ModifyRequest(o); got.Ticket != 9 || got.SL != 1.1 || got.Order != o {
		t.Errorf("modify request %+v", got)
	}
}

// TestEnumNames: every defined value has its own name, and undefined values say so.
func TestEnumNames(t *testing.T) {
	seen := map[string]bool{}
	check := func(name string) {
		if seen[name] || strings.Contains(name, "(") {
			t.Errorf("name %q repeated or undefined", name)
		}
		seen[name] = true
	}
	for k := Open; k <= Modify; k++ {
		check("kind " + k.String())
	}
	for r := ReasonCopyMissing; r <= ReasonProtection; r++ {
		check("reason " + r.String())
	}
	for r := SkipFilteredSymbol; r <= SkipRestricted; r++ {
		check("skip " + r.String())
	}
	for m := StopsCopy; m <= StopsFixed; m++ {
		check("stops " + m.String())
	}
	for f := BothSides; f <= SellOnly; f++ {
		check("sides " + f.String())
	}
	if !strings.Contains(ActionKind(0).String(), "(") || !strings.Contains(SkipReason(99).String(), "(") ||
		!strings.Contains(Reason(0).String(), "(") || !strings.Contains(SizingMode(0).String(), "(") {
		t.Error("undefined values need a marked name")
	}
	a := Action{Kind: Open, Side: broker.Buy, Symbol: "EURUSD", Volume: 0.1, MasterTicket: 5, Reason: ReasonCopyMissing}
	if s := a.String(); !strings.Contains(s, "open buy EURUSD 0.1") {
		t.Errorf("String() = %q", s)
	}
	if s := (Skip{MasterTicket: 5, Reason: SkipTooOld, Detail: "age 2m0s > 1m0s"}).String(); !strings.Contains(s, "too_old") {
		t.Errorf("String() = %q", s)
	}
}

// TestActionStringIsSprintf: String builds its text by hand for speed; it must read as the
// fmt form it replaced, for every kind, side and reason, and for floats fmt prints in
// exponent form or not at all.
func TestActionStringIsSprintf(t *testing.T) {
	want := func(a Action) string {
		switch a.Kind {
		case Open:
			return fmt.Sprintf("open %s %s %v (master %d, %s) sl=%v tp=%v", a.Side, a.Symbol, a.Volume, a.MasterTicket, a.Reason, a.SL, a.TP)
		case Modify:
			return fmt.Sprintf("modify #%d %s sl=%v tp=%v (master %d, %s)", a.FollowerTicket, a.Symbol, a.SL, a.TP, a.MasterTicket, a.Reason)
		}
		return fmt.Sprintf("%s #%d %s %s %v (master %d, %s)", a.Kind, a.FollowerTicket, a.Side, a.Symbol, a.Volume, a.MasterTicket, a.Reason)
	}
	floats := []float64{0, 0.01, 1.1, 1.23456789, 100, 1e6, 123456789, 1e21, 1e-5, -0.5, math.Inf(1), math.NaN()}
	n := 0
	for k := ActionKind(0); k <= 6; k++ {
		for _, side := range []broker.Side{broker.Buy, broker.Sell, 0} {
			for r := Reason(0); r <= 12; r++ {
				for i, f := range floats {
					a := Action{Kind: k, Side: side, Reason: r, Symbol: "EURUSD", Volume: f,
						SL: floats[(i+3)%len(floats)], TP: floats[(i+7)%len(floats)], MasterTicket: int64(i) * 1e9, FollowerTicket: -int64(i)}
					if got, w := a.String(), want(a); got != w {
						t.Fatalf("String() = %q, want %q", got, w)
					}
					n++
				}
			}
		}
	}
	if n == 0 {
		t.Fatal("no action compared")
	}
}

// BenchmarkActionString is the journal's text of one order (every order formats one).
func BenchmarkActionString(b *testing.B) {
	a := Action{Kind: Open, Side: broker.Buy, Symbol: "EURUSD", Volume: 0.12, SL: 1.0825, TP: 1.0975, MasterTicket: 123456789, Reason: ReasonCopyMissing}
	b.ReportAllocs()
	for b.Loop() {
		_ = a.String()
	}
}

// BenchmarkActionSprintf is the fmt form String replaced, for comparison.
func BenchmarkActionSprintf(b *testing.B) {
	a := Action{Kind: Open, Side: broker.Buy, Symbol: "EURUSD", Volume: 0.12, SL: 1.0825, TP: 1.0975, MasterTicket: 123456789, Reason: ReasonCopyMissing}
	b.ReportAllocs()
	for b.Loop() {
		_ = fmt.Sprintf("open %s %s %v (master %d, %s) sl=%v tp=%v", a.Side, a.Symbol, a.Volume, a.MasterTicket, a.Reason, a.SL, a.TP)
	}
}
