package main

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/snapcopier/copier/actors"
	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/broker/fix"
	"github.com/snapcopier/copier/cmd/copierd/setup"
	"github.com/snapcopier/copier/reconcile"
)

// The demo over a standard FIX 4.4 venue (copierd demo --broker fix --fix-dialect fix44):
// the followers trade through the simulator's strict FIX front in the fix44 dialect, with
// the simulator's symbols as the nodes' list and their positions in the store-backed
// position book, while the masters are read in-process from the simulator (a strict venue
// has no position feed: a firm with such a venue for its followers reads its masters from
// their own platform).

// splitBroker routes each account to its broker: the masters to the in-process simulator,
// every other account (the followers) to the FIX broker.
type splitBroker struct {
	masters map[string]bool // master logins
	master  broker.Broker
	other   broker.Broker
}

func (b splitBroker) Connect(ctx context.Context, creds broker.Credentials) (broker.Session, error) {
	if b.masters[creds.Login] {
		return b.master.Connect(ctx, creds)
	}
	return b.other.Connect(ctx, creds)
}

// strictSymbols is the nodes' symbol list for the strict front, which has no SecurityList:
// the simulator's symbols, with the front's ids (the simulator's order, from 1).
func (d *demo) strictSymbols(ctx context.Context) ([]fix.Symbol, error) {
	s, err := d.sim.Connect(ctx, broker.Credentials{Login: "demo-symbols"})
	if err != nil {
		return nil, err
	}
	defer func() { _ = s.Close() }()
	specs, err := s.Symbols(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]fix.Symbol, len(specs))
	for i, sp := range specs {
		out[i] = fix.Symbol{SymbolSpec: sp, ID: strconv.Itoa(i + 1)}
	}
	return out, nil
}

// fix44Sizings are the sizings of a fix44 demo's followers: those that need no equity
// (the strict venue answers no CollateralInquiry).
func fix44Sizings() []setup.Sizing {
	return []setup.Sizing{
		{Label: "lot multiplier ×1", Mode: reconcile.SizeLotMultiplier, Multiplier: 1},
		{Label: "fixed lot 0.1", Mode: reconcile.SizeFixedLot, FixedLot: 0.1},
		{Label: "lot multiplier ×2", Mode: reconcile.SizeLotMultiplier, Multiplier: 2},
	}
}

// landings counts the fills of copy orders at the strict front, as the nodes' position
// books record them, and prints the first few.
type landings struct {
	d       *demo
	count   atomic.Int64
	printed atomic.Int64
}

// landingsShown is how many fills the demo prints; the rest are counted in the progress
// lines.
const landingsShown = 10

// landed reports one book write after a fill: the position it opened, grew, reduced or
// closed (no volume).
func (l *landings) landed(login string, p broker.Position) {
	l.count.Add(1)
	n := l.printed.Add(1)
	switch {
	case n > landingsShown+1:
	case n == landingsShown+1:
		l.d.printf("(further fills are counted in the progress lines)")
	case p.Volume > 0:
		l.d.printf("copy filled at the strict FIX front: %s now holds %s %s %v lots (book ticket %d, %s)", login, p.Side, p.Symbol, p.Volume, p.Ticket, p.Comment)
	default:
		l.d.printf("copy filled at the strict FIX front: %s closed book ticket %d", login, p.Ticket)
	}
}

// landingBook is a node's position book that reports every write to the landings.
type landingBook struct {
	fix.Book
	l *landings
}

func (b landingBook) Put(ctx context.Context, login string, fence broker.Order, p fix.BookPosition) error {
	if err := b.Book.Put(ctx, login, fence, p); err != nil {
		return err
	}
	b.l.landed(login, p.Position)
	return nil
}

// reconcileFailures records the followers' failed reconciles (from the nodes' signals) and
// prints the first: over the strict front it says why no copy lands.
type reconcileFailures struct {
	d     *demo
	count atomic.Int64
	once  sync.Once
}

// observe is the nodes' actors.Deps.Observe: it must return at once.
func (r *reconcileFailures) observe(s actors.Signal) {
	if s.Kind != actors.SignalReconcileDone || s.Err == nil {
		return
	}
	r.count.Add(1)
	r.once.Do(func() {
		r.d.printf("a follower's reconcile failed (the progress lines count them): follower %d: %s", s.Account, oneLine(s.Err))
	})
}

// nettingProblem returns what is wrong with a fix44 follower, or "": its positions at the
// venue (a netting account) and in its position book, against its master's. The venue and
// the book hold the same net volume per symbol, every book position has the link's magic,
// a lot-multiplier follower's net per symbol is the master's net times the multiplier, and
// a follower of another sizing holds only symbols its master holds.
func nettingProblem(f demoFollower, venue, book, masterPs []broker.Position) string {
	net := func(ps []broker.Position) map[string]float64 {
		out := map[string]float64{}
		for _, p := range ps {
			out[p.Symbol] += float64(p.Side) * p.Volume
		}
		return out
	}
	atVenue, inBook, master := net(venue), net(book), net(masterPs)
	var symbols []string
	for _, m := range []map[string]float64{atVenue, inBook, master} {
		for s := range m {
			if !slices.Contains(symbols, s) {
				symbols = append(symbols, s)
			}
		}
	}
	slices.Sort(symbols)
	const eps = 1e-6
	for _, p := range book {
		if p.Magic != f.magic {
			return fmt.Sprintf("book position %d has magic %d, the link's is %d", p.Ticket, p.Magic, f.magic)
		}
	}
	for _, s := range symbols {
		if math.Abs(atVenue[s]-inBook[s]) > eps {
			return fmt.Sprintf("%s: the venue holds %v lots net, the position book %v", s, round2(atVenue[s]), round2(inBook[s]))
		}
		held := false
		for _, p := range masterPs {
			held = held || p.Symbol == s
		}
		switch {
		case f.settings.Sizing.Mode == reconcile.SizeLotMultiplier:
			if want := master[s] * f.settings.Sizing.Multiplier; math.Abs(atVenue[s]-want) > eps {
				return fmt.Sprintf("%s: %v lots net, want %v (the master's net %v × %v)", s, round2(atVenue[s]), round2(want), round2(master[s]), f.settings.Sizing.Multiplier)
			}
		case !held && math.Abs(atVenue[s]) > eps:
			return fmt.Sprintf("%s: %v lots net, the master holds none", s, round2(atVenue[s]))
		}
	}
	return ""
}

// round2 rounds lots for messages.
func round2(v float64) float64 { return math.Round(v*100) / 100 }
