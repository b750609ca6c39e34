package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/reconcile/protect"
	"github.com/snapcopier/copier/store"
)

// The demo's losing master. Follower 1 (a ×1 copier of master 1) has a drawdown limit of
// its own; after --losing-after of trading, master 1 buys gold and the demo moves the gold
// price against it step by step (a losing streak) until follower 1 is stopped out or
// losingSteps pass, then master 1 closes the position at its loss. The stop-out closes
// follower 1's copies and shows on its account page; the verdict counts it.
const (
	guardedDrawdownPercent = 3
	losingSymbol           = "XAUUSD"
	losingLots             = 2
	losingStep             = 3.0 // USD per ounce per step: 600 USD per step on a ×1 copy of 2 lots
	losingSteps            = 40
	losingPause            = 500 * time.Millisecond
)

// guardFollower gives the first follower its drawdown limit.
func (d *demo) guardFollower(ctx context.Context) error {
	if len(d.followers) == 0 {
		return nil
	}
	doc, err := json.Marshal(protect.Limits{Drawdown: &protect.Drawdown{Percent: guardedDrawdownPercent}})
	if err != nil {
		return err
	}
	if err := store.SetAccountProtection(ctx, d.pool, d.followers[0].id, doc); err != nil {
		return err
	}
	d.printf("follower %d has a %d %% drawdown limit; master %d will lose on %s after %v of trading",
		d.followers[0].id, guardedDrawdownPercent, d.masters[d.followers[0].master].id, losingSymbol, d.f.losingAfter)
	return nil
}

// stoppedOut returns the followers with a stop-out in force, by id.
func (d *demo) stoppedOut(ctx context.Context) map[int64]*protect.StopOut {
	out := map[int64]*protect.StopOut{}
	now := time.Now()
	for _, f := range d.followers {
		rows, err := store.ProtectionStates(ctx, d.pool, f.id)
		if err != nil {
			continue
		}
		for _, r := range rows {
			var st protect.State
			if json.Unmarshal(r.State, &st) == nil && st.Stopped(now) {
				out[f.id] = st.Stop
			}
		}
	}
	return out
}

// losingStreak runs master 1's losing streak and reports whether follower 1 was stopped
// out by it.
func (d *demo) losingStreak(ctx context.Context) bool {
	guarded := d.followers[0]
	master := d.masters[guarded.master].login
	d.printf("master %s starts a losing streak on %s", master, losingSymbol)
	var ticket int64
	defer func() {
		if ticket != 0 {
			if err := d.sim.MasterClose(context.Background(), master, ticket, 0); err != nil {
				d.log.Warn().Err(err).Msg("demo: closing the losing position")
			}
		}
	}()
	price := 0.0
	for step := 0; step < losingSteps; step++ {
		if ticket == 0 || !d.masterHolds(ctx, master, ticket) {
			p, err := d.sim.MasterOpen(ctx, master, broker.MasterOpenRequest{Symbol: losingSymbol, Side: broker.Buy, Volume: losingLots, Comment: "losing streak"})
			if err != nil {
				d.log.Warn().Err(err).Msg("demo: opening the losing position")
				return false
			}
			ticket, price = p.Ticket, p.OpenPrice
		}
		price -= losingStep
		d.sim.SetPrice(losingSymbol, price)
		if stop := d.stoppedOut(ctx)[guarded.id]; stop != nil {
			d.printf("follower %d stopped out: %s at equity %.2f (loss %.2f); its copies are closed, master %s keeps losing",
				guarded.id, stop.Reason, stop.Equity, stop.Loss, master)
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(losingPause):
		}
	}
	d.printf("follower %d was NOT stopped out after %d losing steps", guarded.id, losingSteps)
	return false
}

// masterHolds reports whether master login still holds ticket (the activity may close it).
func (d *demo) masterHolds(ctx context.Context, login string, ticket int64) bool {
	ps, err := d.sim.AccountPositions(ctx, login)
	if err != nil {
		return false
	}
	for _, p := range ps {
		if p.Ticket == ticket {
			return true
		}
	}
	return false
}

// stopOutLine describes the stop-outs for the verdict.
func stopOutLine(stopped map[int64]*protect.StopOut) string {
	if len(stopped) == 0 {
		return "no follower is stopped out"
	}
	return fmt.Sprintf("%d follower(s) stopped out by their protections (copies closed, nothing new copied until a reset)", len(stopped))
}
