package main

import (
	"strings"
	"testing"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/reconcile"
)

// TestFollowerProblem: the demo's verdict on one follower finds what the stress check
// finds (a missing copy, a duplicate, an orphan, a foreign magic) and, on copies that
// match, a wrong side, SL/TP or lot-multiplier volume.
func TestFollowerProblem(t *testing.T) {
	x2 := reconcile.DefaultSettings()
	x2.Sizing.Multiplier = 2
	f := demoFollower{id: 1_000_001, login: "follower-1", magic: 7001, settings: x2}
	m1 := broker.Position{Ticket: 1, Symbol: "EURUSD", Side: broker.Buy, Volume: 0.1, SL: 1.05}
	m2 := broker.Position{Ticket: 2, Symbol: "XAUUSD", Side: broker.Sell, Volume: 0.3}
	cp := func(master broker.Position, mod func(*broker.Position)) broker.Position {
		p := broker.Position{Ticket: 100 + master.Ticket, Symbol: master.Symbol, Side: master.Side, Volume: master.Volume * 2, SL: master.SL,
			Magic: 7001, Comment: reconcile.Marker(master.Ticket)}
		if mod != nil {
			mod(&p)
		}
		return p
	}
	masters := []broker.Position{m1, m2}
	for _, c := range []struct {
		name string
		ps   []broker.Position
		want string // "" = in line
	}{
		{"in line", []broker.Position{cp(m1, nil), cp(m2, nil)}, ""},
		{"missing", []broker.Position{cp(m1, nil)}, "master ticket 2: master position open, no copy"},
		{"duplicate", []broker.Position{cp(m1, nil), cp(m2, nil), cp(m2, func(p *broker.Position) { p.Ticket = 999 })}, "copies of one master position"},
		{"orphan", []broker.Position{cp(m1, nil), cp(m2, nil), cp(broker.Position{Ticket: 3, Volume: 0.1}, nil)}, "master position closed"},
		{"foreign magic", []broker.Position{cp(m1, nil), cp(m2, func(p *broker.Position) { p.Magic = 1 })}, "magic 1 belongs to none"},
		{"side", []broker.Position{cp(m1, func(p *broker.Position) { p.Side = broker.Sell }), cp(m2, nil)}, "position 101 is"},
		{"stop loss", []broker.Position{cp(m1, func(p *broker.Position) { p.SL = 1.04 }), cp(m2, nil)}, "has SL/TP 1.04/0"},
		{"volume", []broker.Position{cp(m1, nil), cp(m2, func(p *broker.Position) { p.Volume = 0.3 })}, "has 0.3 lots, want 0.6"},
	} {
		got := followerProblem(f, "master-1", c.ps, masters)
		switch {
		case c.want == "" && got != "":
			t.Errorf("%s: %q, want in line", c.name, got)
		case c.want != "" && !strings.Contains(got, c.want):
			t.Errorf("%s: %q, want it to say %q", c.name, got, c.want)
		}
	}
}

// TestNettingProblem: the fix44 demo's verdict on a netting follower: the venue's net per
// symbol must match the position book's, every book position has the link's magic, a
// lot-multiplier follower nets the master's net times the multiplier, and a fixed-lot one
// holds only symbols its master holds.
func TestNettingProblem(t *testing.T) {
	x2 := reconcile.DefaultSettings()
	x2.Sizing.Multiplier = 2
	fixed := reconcile.DefaultSettings()
	fixed.Sizing.Mode, fixed.Sizing.FixedLot = reconcile.SizeFixedLot, 0.1
	mult := demoFollower{id: 1, login: "follower-1", magic: 7001, settings: x2}
	lot := demoFollower{id: 2, login: "follower-2", magic: 7001, settings: fixed}
	masters := []broker.Position{
		{Ticket: 1, Symbol: "EURUSD", Side: broker.Buy, Volume: 0.3},
		{Ticket: 2, Symbol: "EURUSD", Side: broker.Sell, Volume: 0.1},
		{Ticket: 3, Symbol: "XAUUSD", Side: broker.Sell, Volume: 0.2},
	}
	pos := func(sym string, side broker.Side, vol float64, magic int64) broker.Position {
		return broker.Position{Ticket: 10, Symbol: sym, Side: side, Volume: vol, Magic: magic}
	}
	inLine := []broker.Position{pos("EURUSD", broker.Buy, 0.4, 7001), pos("XAUUSD", broker.Sell, 0.4, 7001)}
	for _, c := range []struct {
		name               string
		f                  demoFollower
		venue, book, mstrs []broker.Position
		want               string // "" = in line
	}{
		{"in line", mult, inLine, inLine, masters, ""},
		{"flat on a flat master", mult, nil, nil, nil, ""},
		{"venue and book differ", mult, inLine, inLine[:1], masters, "XAUUSD: the venue holds -0.4 lots net, the position book 0"},
		{"foreign magic in the book", mult, inLine, []broker.Position{pos("EURUSD", broker.Buy, 0.4, 1), inLine[1]}, masters, "has magic 1"},
		{"multiplier", mult, []broker.Position{pos("EURUSD", broker.Buy, 0.2, 7001), inLine[1]}, []broker.Position{pos("EURUSD", broker.Buy, 0.2, 7001), inLine[1]}, masters, "EURUSD: 0.2 lots net, want 0.4"},
		{"missing copy", mult, inLine[:1], inLine[:1], masters, "XAUUSD: 0 lots net, want -0.4"},
		{"fixed lot in line", lot, []broker.Position{pos("XAUUSD", broker.Sell, 0.1, 7001)}, []broker.Position{pos("XAUUSD", broker.Sell, 0.1, 7001)}, masters, ""},
		{"fixed lot orphan", lot, []broker.Position{pos("GBPUSD", broker.Buy, 0.1, 7001)}, []broker.Position{pos("GBPUSD", broker.Buy, 0.1, 7001)}, masters, "GBPUSD: 0.1 lots net, the master holds none"},
	} {
		got := nettingProblem(c.f, c.venue, c.book, c.mstrs)
		switch {
		case c.want == "" && got != "":
			t.Errorf("%s: %q, want in line", c.name, got)
		case c.want != "" && !strings.Contains(got, c.want):
			t.Errorf("%s: %q, want it to say %q", c.name, got, c.want)
		}
	}
}
