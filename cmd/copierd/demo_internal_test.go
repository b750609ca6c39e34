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
