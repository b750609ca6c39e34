package follower

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/reconcile/protect"
)

// guard is one scope of a follower's stop-outs (scope 0: the follower's own limits; any
// other: the link of that id): its limits and what they remember.
type guard struct {
	limits protect.Limits
	state  protect.State
	gen    int64 // the operator-reset generation state is based on
}

// stopMode is the close-only mode that g's stop-out in force at now imposes: none, no new
// copies (keep_on_breach), or close the copies.
func (g *guard) stopMode(now time.Time) protect.CloseOnly {
	if g == nil || !g.state.Stopped(now) {
		return protect.CopyNormally
	}
	if g.limits.KeepOnBreach {
		return protect.LetClose
	}
	return protect.CloseNow
}

// loadGuards rebuilds the guards after a (re)load. A guard the Core already holds keeps
// its state, which is ahead of the database (its writes are queued), unless an operator
// reset the scope meanwhile (a newer generation): then the stored state is adopted. A new
// owner adopts the stored states, so a stop-out survives a takeover.
func (c *Core) loadGuards(p Protection) error {
	want := map[int64]protect.Limits{}
	var bad error
	if len(p.Limits) > 0 {
		var l protect.Limits
		err := json.Unmarshal(p.Limits, &l)
		if err == nil {
			err = l.Validate()
		}
		if err != nil {
			// Refuse to copy anything new rather than run without the limits asked for.
			bad = fmt.Errorf("follower protections: %w", err)
			l = protect.Limits{CloseOnly: protect.LetClose}
		}
		want[0] = l
	}
	for _, l := range c.links {
		if l.link.Settings.Protect.Enabled() {
			want[l.id] = l.link.Settings.Protect
		}
	}
	guards := make(map[int64]*guard, len(want))
	for _, scope := range slices.Sorted(maps.Keys(want)) { // the first bad state named, always the same
		lim := want[scope]
		g := c.guards[scope]
		row, stored := p.States[scope]
		if g == nil || stored && row.ResetGen != g.gen {
			g = &guard{}
			if stored {
				if err := json.Unmarshal(row.State, &g.state); err != nil {
					bad = fmt.Errorf("protection state of scope %d: %w", scope, err)
				}
				g.gen = row.ResetGen
			}
		}
		g.limits = lim
		guards[scope] = g
	}
	c.guards = guards
	return bad
}

// scopes are the guarded scopes in order (0, the follower's own, first): every Ready
// lists protection rows, journal entries and notes in this order, whatever the map's.
func (c *Core) scopes() []int64 { return slices.Sorted(maps.Keys(c.guards)) }

// followerMode is the close-only mode the follower's own limits impose on every link:
// when its limits row is invalid, no new copies.
func (c *Core) followerMode() protect.CloseOnly {
	if g := c.guards[0]; g != nil {
		return g.limits.CloseOnly
	}
	return protect.CopyNormally
}

// blind reports whether g has limits to measure and the follower's equity is unknown
// (broker.AccountInfo.EquityUnknown): the limits cannot be evaluated.
func (c *Core) blind(g *guard) bool {
	return g != nil && c.equityUnknown && g.limits.Enabled()
}

// guardMode is the close-only mode scope g imposes at now: its stop-out's, and no new
// copies while its limits cannot be evaluated (the equity is unknown). An unknown equity
// is never measured, as 0 or otherwise: it neither breaches a limit nor lifts a stop-out.
func (c *Core) guardMode(g *guard, now time.Time) protect.CloseOnly {
	mode := g.stopMode(now)
	if c.blind(g) {
		mode = protect.Stricter(mode, protect.LetClose)
	}
	return mode
}

// applyProtection sets each link's effective close-only mode: the stricter of its own, the
// follower's, and what a stop-out in force (the follower's or the link's) imposes, or a
// limit that cannot be evaluated (guardMode). It reports whether any link's mode changed;
// the caller then reconciles (a plan made under the old modes must not be carried out:
// protGen tells).
func (c *Core) applyProtection(now time.Time) bool {
	changed := false
	followerStop := c.guardMode(c.guards[0], now)
	for i := range c.links {
		l := &c.links[i]
		mode := protect.Stricter(l.closeOnly, protect.Stricter(c.followerMode(), protect.Stricter(followerStop, c.guardMode(c.guards[l.id], now))))
		if l.link.Settings.Protect.CloseOnly != mode {
			l.link.Settings.Protect.CloseOnly = mode
			changed = true
		}
	}
	stopped := ""
	for _, scope := range c.scopes() { // the follower's own stop first, then the lowest link's
		g := c.guards[scope]
		if g.state.Stopped(now) {
			stopped = describeStop(scope, g.state.Stop)
			break
		}
	}
	for _, scope := range c.scopes() { // no stop-out: the first scope held for an unknown equity
		if stopped != "" {
			break
		}
		if c.blind(c.guards[scope]) {
			stopped = describeBlind(scope)
		}
	}
	if c.status.StopOut != stopped {
		c.status.StopOut = stopped
		c.ready.StatusChanged = true
	}
	if changed {
		c.protGen++
	}
	return changed
}

func describeStop(scope int64, s *protect.StopOut) string {
	where := "follower"
	if scope != 0 {
		where = fmt.Sprintf("link %d", scope)
	}
	return fmt.Sprintf("%s stopped out (%s) at equity %.2f, loss %.2f", where, s.Reason, s.Equity, s.Loss)
}

// describeBlind is the status of a scope whose limits cannot be evaluated.
func describeBlind(scope int64) string {
	where := "follower"
	if scope != 0 {
		where = fmt.Sprintf("link %d", scope)
	}
	return where + " equity protection cannot be evaluated: equity unknown (no new copies)"
}

// readEquity takes one reading of the follower's account into the status and the guards
// (observeEquity), or, when the trade server does not say the equity, marks it unknown and
// holds new copies where a limit needs it. It reports whether a link's mode changed (see
// applyProtection).
func (c *Core) readEquity(now time.Time, info broker.AccountInfo) bool {
	c.status.Balance, c.status.Equity, c.status.EquityUnknown = info.Balance, info.Equity, info.EquityUnknown
	if info.EquityUnknown {
		c.status.Balance, c.status.Equity = 0, 0 // not the account's: never shown as its
	} else if !c.follower.Info.EquityUnknown {
		// Sizing by balance or equity plans on the latest reading, the equity watcher's too.
		c.follower.Info.Balance, c.follower.Info.Equity = info.Balance, info.Equity
	}
	c.ready.StatusChanged = true
	c.equityUnknown = info.EquityUnknown
	if info.EquityUnknown {
		return c.applyProtection(now)
	}
	return c.observeEquity(now, info.Equity)
}

// observeEquity runs every guard on one equity reading: changed states are written, a
// breach is journalled and noted. It reports whether a link's mode changed (see
// applyProtection).
func (c *Core) observeEquity(now time.Time, equity float64) bool {
	if len(c.guards) == 0 {
		return false
	}
	for _, scope := range c.scopes() {
		g := c.guards[scope]
		st, stop := protect.Observe(g.limits, g.state, now, equity)
		if !sameState(st, g.state) {
			g.state = st
			doc, _ := json.Marshal(st)
			c.ready.Protection = append(c.ready.Protection, ProtectionState{Scope: scope, State: doc, ResetGen: g.gen})
		}
		if stop != nil {
			c.ready.Journal = append(c.ready.Journal, Journal{Time: now, StopOut: describeStop(scope, stop), Result: "stop_out"})
			c.note(Note{Kind: NoteStopOut, Link: scope, Stop: stop})
		}
	}
	return c.applyProtection(now)
}

// sameState: nothing a reader of the stored state would see differently.
func sameState(a, b protect.State) bool {
	if a.HighWater != b.HighWater || a.Base != b.Base || !a.Day.Equal(b.Day) || a.DayEquity != b.DayEquity {
		return false
	}
	if a.Stop == nil || b.Stop == nil {
		return a.Stop == b.Stop
	}
	return *a.Stop == *b.Stop
}
