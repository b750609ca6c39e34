package actors

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/reconcile/protect"
	"github.com/snapcopier/copier/store"
)

// causeProtection: a stop-out started or ended, so what the follower may copy changed.
const causeProtection = "protection"

// guard is one scope of a follower's stop-outs (scope 0: the follower's own limits; any
// other: the link of that id): its limits and what they remember.
type guard struct {
	limits protect.Limits
	state  protect.State
	gen    int64 // the operator-reset generation state is based on (store.ProtectionRow)
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

// equityDue asks an account with stop-outs to read its equity; equityRead is the answer.
type equityDue struct{}

type equityRead struct {
	info broker.AccountInfo
	err  error
}

// protectionUpdate carries protection states to the StatusWriter.
type protectionUpdate struct{ rows []store.ProtectionRow }

// loadGuards rebuilds the guards after a (re)load. A guard this actor already holds keeps
// its state, which is ahead of the database (its writes are queued), unless an operator
// reset the scope meanwhile (a newer generation): then the stored state is adopted. A new
// owner adopts the stored states, so a stop-out survives a takeover.
func (a *accountActor) loadGuards(p store.Protection) error {
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
	for _, l := range a.links {
		if l.link.Settings.Protect.Enabled() {
			want[l.row.ID] = l.link.Settings.Protect
		}
	}
	guards := make(map[int64]*guard, len(want))
	for scope, lim := range want {
		g := a.guards[scope]
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
	a.guards = guards
	return bad
}

// followerMode is the close-only mode the follower's own settings impose on every link:
// its close-only column and, when its limits row is invalid, no new copies.
func (a *accountActor) followerMode() protect.CloseOnly {
	if g := a.guards[0]; g != nil {
		return g.limits.CloseOnly
	}
	return protect.CopyNormally
}

// applyProtection sets each link's effective close-only mode: the stricter of its own, the
// follower's, and what a stop-out in force (the follower's or the link's) imposes. It
// reports whether any link's mode changed; the caller then reconciles (a plan made under
// the old modes must not be carried out: protGen tells).
func (a *accountActor) applyProtection(now time.Time) bool {
	changed := false
	followerStop := a.guards[0].stopMode(now)
	stopped := ""
	for i := range a.links {
		l := &a.links[i]
		mode := protect.Stricter(l.closeOnly, protect.Stricter(a.followerMode(), protect.Stricter(followerStop, a.guards[l.row.ID].stopMode(now))))
		if l.link.Settings.Protect.CloseOnly != mode {
			l.link.Settings.Protect.CloseOnly = mode
			changed = true
		}
	}
	for scope, g := range a.guards {
		if g.state.Stopped(now) {
			stopped = describeStop(scope, g.state.Stop)
			break
		}
	}
	a.board.update(func(s *AccountStatus) { s.StopOut = stopped })
	if changed {
		a.protGen++
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

// observeEquity runs every guard on one equity reading: changed states are queued for the
// fenced write, a breach is journalled and counted. It reports whether a link's mode
// changed (see applyProtection).
func (a *accountActor) observeEquity(ctx actor.Context, equity float64) bool {
	if len(a.guards) == 0 {
		return false
	}
	now := a.e.now()
	var rows []store.ProtectionRow
	for scope, g := range a.guards {
		st, stop := protect.Observe(g.limits, g.state, now, equity)
		if !sameState(st, g.state) {
			g.state = st
			doc, _ := json.Marshal(st)
			rows = append(rows, store.ProtectionRow{FollowerID: a.id, LinkID: scope, Epoch: a.epoch, State: doc, ResetGen: g.gen})
		}
		if stop != nil {
			a.e.metrics.StopOuts.Add(1)
			what := describeStop(scope, stop)
			a.board.journal(JournalEntry{Time: time.Now(), Action: what, Result: "stop_out"})
			a.e.log.Warn().Int64("account", a.id).Int64("epoch", a.epoch).Int64("link", scope).Str("reason", string(stop.Reason)).
				Float64("equity", stop.Equity).Float64("loss", stop.Loss).Msg("stop-out")
			a.signal(Signal{Kind: SignalStopOut, Cause: string(stop.Reason), Link: scope})
		}
	}
	if len(rows) > 0 {
		ctx.Send(a.e.writer, protectionUpdate{rows: rows})
	}
	return a.applyProtection(now)
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

// scheduleEquity reads the equity again after EquityEvery, while the follower has
// stop-outs. One timer at a time.
func (a *accountActor) scheduleEquity(ctx actor.Context) {
	if a.equityTimer || a.stopped || len(a.guards) == 0 {
		return
	}
	a.equityTimer = true
	self, root := ctx.Self(), ctx.ActorSystem().Root
	time.AfterFunc(a.e.cfg.EquityEvery, func() { root.Send(self, equityDue{}) })
}

// onEquityDue reads the equity off the mailbox.
func (a *accountActor) onEquityDue(ctx actor.Context) {
	a.equityTimer = false
	if a.stopped || len(a.guards) == 0 {
		return
	}
	if a.loading || a.session == nil || a.equityReading {
		a.scheduleEquity(ctx)
		return
	}
	a.equityReading = true
	self, root, session, timeout := ctx.Self(), ctx.ActorSystem().Root, a.session, a.e.cfg.OrderTimeout
	go func() {
		rctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		info, err := session.Account(rctx)
		root.Send(self, equityRead{info: info, err: err})
	}()
}

func (a *accountActor) onEquityRead(ctx actor.Context, m equityRead) {
	a.equityReading = false
	if a.stopped {
		return
	}
	defer a.scheduleEquity(ctx)
	if m.err != nil {
		a.e.log.Debug().Err(m.err).Int64("account", a.id).Msg("equity read failed")
		return
	}
	a.board.update(func(s *AccountStatus) { s.Balance, s.Equity = m.info.Balance, m.info.Equity })
	if a.observeEquity(ctx, m.info.Equity) {
		a.dirty = true
		a.maybeReconcile(ctx, causeProtection)
	}
}
