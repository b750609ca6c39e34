package actors

import (
	"context"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/snapcopier/copier/broker"
)

// equityDue asks an account with stop-outs to read its equity; equityRead is the answer.
type equityDue struct{}

type equityRead struct {
	info broker.AccountInfo
	err  error
}

// scheduleEquity reads the equity again after EquityEvery, while the follower has
// stop-outs. One timer at a time.
func (a *accountActor) scheduleEquity(ctx actor.Context) {
	if a.equityTimer || a.core.Stopped() || !a.core.Guarded() {
		return
	}
	a.equityTimer = true
	self, root := ctx.Self(), ctx.ActorSystem().Root
	time.AfterFunc(a.e.cfg.EquityEvery, func() { root.Send(self, equityDue{}) })
}

// onEquityDue reads the equity off the mailbox.
func (a *accountActor) onEquityDue(ctx actor.Context) {
	a.equityTimer = false
	if a.core.Stopped() || !a.core.Guarded() {
		return
	}
	if a.session == nil || a.equityReading {
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
	if a.core.Stopped() {
		return
	}
	// The Core asks for the next reading (WatchEquity) while the follower has limits,
	// after a failed one too.
	if m.err != nil {
		a.carry(ctx, a.core.EquityFailed(m.err))
		return
	}
	a.carry(ctx, a.core.EquityRead(a.at(), m.info))
}
