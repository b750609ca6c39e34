package reconcile

import (
	"fmt"
	"slices"

	"github.com/snapcopier/copier/broker"
)

// PlanEvent plans one in-order master event (the fast path). It applies the event to the
// master positions of in (Opened and Modified and PartiallyClosed replace or add the
// position, Closed removes it), then plans like Plan, limited to the event's master ticket
// (on a netting follower: to the follower symbol it maps to, which is planned as a whole).
// The rules are Plan's: an event never opens what a reconcile would close, and an event
// replayed after the fact plans nothing new. On a netting follower new copies are admitted
// as Plan admits them, oldest first over every symbol while max_open_copies allows, so that
// a slot a close frees goes to the same master position on either path.
//
// in.Master.Positions should be the master's positions before the event, as the engine
// tracks them from the feed; an event for an account other than in.Master.Info.Login (when
// both are set) plans nothing and is reported as SkipWrongAccount.
func PlanEvent(ev broker.Event, in Input) Result {
	in.Master.Positions = ApplyEvent(in.Master.Positions, ev)
	return PlanAppliedEvent(ev, in)
}

// PlanAppliedEvent is PlanEvent for an engine that keeps the master's positions current
// itself: in.Master.Positions already include ev, so they are neither copied nor changed.
func PlanAppliedEvent(ev broker.Event, in Input) Result {
	if ev.Login != "" && in.Master.Info.Login != "" && ev.Login != in.Master.Info.Login {
		return Result{Skipped: []Skip{{MasterTicket: ev.Position.Ticket, Symbol: ev.Position.Symbol, Reason: SkipWrongAccount,
			Detail: fmt.Sprintf("event of %s, master is %s", ev.Login, in.Master.Info.Login)}}}
	}
	sc := scope{ticket: ev.Position.Ticket}
	if in.Follower.Info.Mode == broker.Netting {
		if sym, ok := in.Link.Settings.Symbols.ResolveIn(ev.Position.Symbol, in.Follower.Symbols); ok {
			sc.symbol = sym
		}
	}
	return plan(in, sc)
}

// ApplyEvent returns positions after the event: a new slice (positions is not modified)
// where Opened, Modified and PartiallyClosed put ev.Position in place of the position with
// its ticket (or add it), and Closed removes that position.
func ApplyEvent(positions []broker.Position, ev broker.Event) []broker.Position {
	out := slices.DeleteFunc(slices.Clone(positions), func(p broker.Position) bool { return p.Ticket == ev.Position.Ticket })
	switch ev.Kind {
	case broker.Opened, broker.Modified, broker.PartiallyClosed:
		out = append(out, ev.Position)
	}
	return out
}
