package actors

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/leasekeeper"
	"github.com/snapcopier/copier/reconcile"
	"github.com/snapcopier/copier/reconcile/follower"
	"github.com/snapcopier/copier/reconcile/protect"
	"github.com/snapcopier/copier/store"
)

// loaded carries the result of loading configuration and connecting, done off the mailbox.
type loaded struct {
	cfg         store.FollowerConfig
	prot        store.Protection
	tickets     []store.TicketRow // when withTickets
	withTickets bool
	err         error // the session, when one was asked for, is in the actor's inbox
}

type retryLoad struct{}

// accountActor copies its masters' trades to one follower account. It is a translator:
// its messages become inputs of the account's follower.Core (the copy logic), and it
// carries out what the Core returns: orders through the lease gate, reconciles through
// the Reconciler, rows through the StatusWriter, journal and status to the board.
type accountActor struct {
	e     *engine
	id    int64
	epoch int64
	gate  *leasekeeper.Gate
	board *accountBoard
	core  *follower.Core

	session broker.Session
	inbox   *sessionInbox            // where the Loader leaves a connected session
	masters map[int64]store.Account  // the masters of the load being stepped, for followMasters
	feeds   map[int64]broker.Session // master sessions, by master id
	sent    requestIDs               // request ids of orders, and those of unknown outcome
	// inFlight is where the actor leaves, when it stops, until when (gate clock, Unix ns;
	// 0: nothing) an order of unknown outcome may still execute: the Supervisor reads it
	// once the actor has ended, and the lease is held back until then.
	inFlight *atomic.Int64
	// tickAt is where the actor leaves, after every message, when its Core could next use
	// a tick (Core.NextTick: Unix ns; tickAlways; tickNever); the Supervisor ticks only the
	// accounts whose time has come, instead of all of them after every lease cycle.
	tickAt   *atomic.Int64
	tickLeft int64 // what the actor last stored in tickAt (tickAlways before its first message)

	// reportNext is when (engine.elapsed) a report with the phase and error of the last
	// one due at once (reportPhase, reportErr) is due again: see report.
	reportNext  time.Duration
	reportPhase follower.Phase
	reportErr   string

	equityTimer   bool // an equityDue is scheduled
	equityReading bool // an equity read is in flight

	tr orderTrace // with Deps.TraceCopies only
}

func newAccountActor(e *engine, id, epoch int64, gate *leasekeeper.Gate, inFlight, tickAt *atomic.Int64) actor.Producer {
	return func() actor.Actor {
		return &accountActor{e: e, id: id, epoch: epoch, gate: gate, board: e.board.get(id), feeds: map[int64]broker.Session{},
			core: follower.New(follower.Options{ReconcileEvery: e.cfg.ReconcileEvery, ReconcileOffset: repairOffset(id, e.cfg.ReconcileEvery)}),
			sent: requestIDs{margin: e.cfg.Lease.ClockSkew + e.cfg.Lease.MaxDrift()}, inbox: &sessionInbox{},
			inFlight: inFlight, tickAt: tickAt}
	}
}

// Receive implements actor.Actor. A panic is recorded in the status before it propagates:
// the Supervisor then restarts the account with backoff.
func (a *accountActor) Receive(ctx actor.Context) {
	defer func() {
		if r := recover(); r != nil {
			a.e.metrics.Crashes.Add(1)
			a.board.update(func(s *AccountStatus) {
				s.Phase, s.Crashes, s.LastError = PhaseFailed, s.Crashes+1, fmt.Sprintf("crashed: %v", r)
			})
			a.e.log.Error().Int64("account", a.id).Int64("epoch", a.epoch).Interface("panic", r).Msg("account actor crashed")
			panic(r)
		}
	}()
	if a.e.trace != nil {
		a.tr.dequeued = a.e.now()
	}
	defer a.publishNextTick()
	switch m := ctx.Message().(type) {
	case *actor.Started:
		// After a crash the board still holds the account's status: the Core goes on from it.
		var last follower.Status
		a.board.update(func(s *AccountStatus) {
			s.Epoch = a.epoch
			last = follower.Status{Phase: s.Phase, LastError: s.LastError, Balance: s.Balance, Equity: s.Equity, EquityUnknown: s.EquityUnknown, Positions: s.Positions,
				LastCopy: s.LastCopy, LastLag: s.LastLag, Reconciles: s.Reconciles, Dropped: s.Dropped, StopOut: s.StopOut}
		})
		a.carry(ctx, a.core.Start(last))
	case *actor.Stopping:
		if until, ok := a.sent.inFlight(a.e.clock.Now()); ok {
			a.inFlight.Store(until.UnixNano())
		}
		a.carry(ctx, a.core.Stop())
		a.inbox.close()
		if a.session != nil {
			_ = a.session.Close()
			a.session = nil
		}
	case retryLoad:
		a.carry(ctx, a.core.RetryLoad())
	case loaded:
		a.onLoaded(ctx, m)
	case configChanged:
		a.carry(ctx, a.core.ConfigChanged(m.version))
	case masterSession:
		a.feeds[m.masterID] = m.session
		a.carry(ctx, a.core.MasterAttached(a.at(), m.masterID, m.restarted, m.epoch, m.seq, m.clock))
	case *masterEvent:
		if m.behind() {
			a.carry(ctx, a.core.EventBehind(a.at(), m.masterID, &m.event, m.received))
		} else {
			a.carry(ctx, a.core.Event(a.at(), m.masterID, &m.event, m.received))
		}
	case flushEvents:
		a.carry(ctx, a.core.FlushEvents(a.at()))
	case reconcileResponse:
		a.tr.reconStarted, a.tr.reconDone = m.started, m.finished
		a.carry(ctx, a.core.Reconciled(a.at(), &m.Reconciled))
	case accountTick:
		a.carry(ctx, a.core.Tick(a.at()))
	case equityDue:
		a.onEquityDue(ctx)
	case equityRead:
		a.onEquityRead(ctx, m)
	case repairDue:
		a.carry(ctx, a.core.RepairDue(a.at()))
	case resendDue:
		a.carry(ctx, a.core.ResendDue(a.at()))
	case repairTurn:
		rd := a.core.RepairTurn(a.at())
		if rd.Reconcile == nil {
			ctx.Send(a.e.reconciler, repairDeclined{accountID: a.id})
		}
		a.carry(ctx, rd)
	}
}

// Values of accountActor.tickAt besides a time.
const (
	tickAlways int64 = 0  // tick after every lease cycle (and until the actor says otherwise)
	tickNever  int64 = -1 // no tick can do anything until the account's next message
)

// publishNextTick leaves Core.NextTick where the Supervisor reads it, writing the shared
// word only when it changed (it runs after every message, the fan-out's included).
func (a *accountActor) publishNextTick() {
	v := tickNever
	if at, ok := a.core.NextTick(); ok {
		v = tickAlways
		if !at.IsZero() {
			v = at.UnixNano()
		}
	}
	if v != a.tickLeft {
		a.tickLeft = v
		a.tickAt.Store(v)
	}
}

// tickDue reports whether an account that left tickAt should be ticked at now.
func tickDue(tickAt int64, now time.Time) bool {
	return tickAt == tickAlways || (tickAt > 0 && tickAt <= now.UnixNano())
}

// carry does what the Core asks, stepping the outcome of each synchronous operation (an
// order, the token, a positions read) back into it until nothing more is asked now.
func (a *accountActor) carry(ctx actor.Context, rd *follower.Ready) {
	for {
		a.effects(ctx, rd)
		switch {
		case rd.Send != nil:
			o := *rd.Send
			a.traceStart(&o)
			out := a.send(o.Action)
			// The lease as the order's own gate check found it (a dropped order found it
			// lost): the Core reads it only to schedule reconciles.
			rd = a.core.OrderDone(follower.At{Now: a.e.now(), Lease: !out.Dropped}, out)
			if rd.ResendIn == 0 { // its last attempt
				a.traceOrder(&o, out)
			}
		case rd.RaiseToken:
			err, dropped := a.raiseToken()
			rd = a.core.TokenDone(a.e.now(), err, dropped)
		case rd.ReadPositions:
			ps, err := a.readPositions()
			rd = a.core.PositionsRead(a.at(), ps, err)
		default:
			return
		}
	}
}

// effects carries out the asynchronous part of rd.
func (a *accountActor) effects(ctx actor.Context, rd *follower.Ready) {
	if rd.Fence {
		a.gate.Fence()
	}
	if rd.FlushEvents {
		ctx.Send(ctx.Self(), flushEvents{})
	}
	if rd.StatusChanged || len(rd.Journal) > 0 {
		var st *follower.Status
		if rd.StatusChanged {
			s := a.core.Status()
			st = &s
		}
		a.board.record(st, rd.Journal)
	}
	for i := range rd.Journal {
		if j := &rd.Journal[i]; j.HasQuality {
			a.e.metrics.latency.observe(j.Latency)
			a.e.metrics.observeQuality(j.Quality)
		}
	}
	if len(rd.Tickets) > 0 || len(rd.Protection) > 0 || rd.WriteStatus {
		rows := accountRows{id: a.id, epoch: a.epoch, tickets: rd.Tickets, protection: rd.Protection}
		if rd.WriteStatus {
			a.report(&rows.report)
			rows.hasReport = true
		}
		a.e.writes.put(&rows)
	}
	// Notes after the writes: an observer that sees a step's signal can flush its rows.
	for i := range rd.Notes {
		a.noted(&rd.Notes[i])
	}
	if rd.MastersChanged {
		masters := make(map[int64]store.Account, len(rd.Masters))
		for _, id := range rd.Masters {
			masters[id] = a.masters[id]
		}
		for id := range a.feeds {
			if _, ok := masters[id]; !ok {
				delete(a.feeds, id)
			}
		}
		ctx.Send(a.e.supervisor, followMasters{accountID: a.id, pid: ctx.Self(), masters: masters})
	}
	if rd.Reconcile != nil {
		req := reconcileRequest{accountID: a.id, follower: a.session, masters: make(map[int64]broker.Session, len(rd.Reconcile.Masters)),
			ask: *rd.Reconcile, replyTo: ctx.Self()}
		for _, id := range rd.Reconcile.Masters {
			req.masters[id] = a.feeds[id]
		}
		if a.e.trace != nil {
			a.tr.reconAsked, a.tr.reconCause = a.e.now(), rd.Reconcile.Cause
		}
		ctx.Send(a.e.reconciler, req)
	}
	if rd.WantRepair {
		ctx.Send(a.e.reconciler, repairWanted{accountID: a.id, pid: ctx.Self()})
	}
	if rd.Expedite {
		ctx.Send(a.e.reconciler, reconcileExpedite{accountID: a.id})
	}
	if rd.Prioritize {
		ctx.Send(a.e.reconciler, reconcilePrioritize{accountID: a.id})
	}
	if rd.Load != nil {
		a.load(ctx, *rd.Load)
	}
	if rd.RetryLoadIn > 0 {
		a.sendAfter(ctx, rd.RetryLoadIn, retryLoad{})
	}
	if rd.Repair {
		a.sendAfter(ctx, rd.RepairIn, repairDue{})
	}
	if rd.ResendIn > 0 {
		a.sendAfter(ctx, rd.ResendIn, resendDue{})
	}
	if rd.WatchEquity {
		a.scheduleEquity(ctx)
	}
}

// noted turns a Core note into metrics, logs and the observer's signals.
func (a *accountActor) noted(n *follower.Note) {
	log := a.e.log
	switch n.Kind {
	case follower.NoteLoaded:
		a.signal(Signal{Kind: SignalLoaded, ConfigVersion: n.Version, Links: n.Links})
	case follower.NoteLoadFailed:
		log.Warn().Err(n.Err).Int64("account", a.id).Msg("account load failed; retrying")
	case follower.NoteBadConfig:
		log.Error().Err(n.Err).Int64("account", a.id).Msg("configuration unusable; copying nothing new under it")
	case follower.NoteFeedAttached:
		a.signal(Signal{Kind: SignalFeedAttached, Master: n.Master, Restarted: n.Restarted})
	case follower.NoteReconcileStarted:
		a.e.metrics.countReconcile(n.Cause)
		log.Debug().Int64("account", a.id).Int64("epoch", a.epoch).Stringer("cause", n.Cause).Msg("reconcile")
		a.signal(Signal{Kind: SignalReconcileStarted, Cause: n.Cause.String()})
	case follower.NoteReconcileFailed:
		log.Warn().Err(n.Err).Int64("account", a.id).Msg("reconcile failed")
	case follower.NoteReconcileDone:
		a.signal(Signal{Kind: SignalReconcileDone, Cause: n.Cause.String(), Err: n.Err, Idle: n.Idle})
	case follower.NoteOrderFailed:
		a.orderFailed(n.Action, n.Err, n.Failure)
	case follower.NoteOrderRetry:
		a.e.metrics.OrdersRetryable.Add(1)
	case follower.NoteDropped:
		a.e.metrics.DroppedWork.Add(1)
		log.Warn().Int64("account", a.id).Int64("epoch", a.epoch).Str("dropped", n.Action.String()).Msg("lease not confirmed, order not sent")
	case follower.NoteTokenFailed:
		a.tokenFailed(n.Err, n.Failure)
	case follower.NoteSkipped:
		a.e.metrics.countSkip(n.Skip.Reason)
		log.Debug().Int64("account", a.id).Int64("link", n.Link).Int64("master_ticket", n.Skip.MasterTicket).
			Stringer("reason", n.Skip.Reason).Str("detail", n.Skip.Detail).Msg("master position not copied")
	case follower.NoteEquityFailed:
		log.Debug().Err(n.Err).Int64("account", a.id).Msg("equity read failed")
	case follower.NoteStopOut:
		a.e.metrics.StopOuts.Add(1)
		log.Warn().Int64("account", a.id).Int64("epoch", a.epoch).Int64("link", n.Link).Str("reason", string(n.Stop.Reason)).
			Float64("equity", n.Stop.Equity).Float64("loss", n.Stop.Loss).Msg("stop-out")
		a.signal(Signal{Kind: SignalStopOut, Cause: string(n.Stop.Reason), Link: n.Link})
	}
}

// load asks the Loader for the configuration (and a session), off the mailbox.
func (a *accountActor) load(ctx actor.Context, ask follower.LoadAsk) {
	ctx.Send(a.e.loader, loadRequest{req: store.LoadRequest{ID: a.id, Tickets: ask.Tickets}, connect: ask.Connect, inbox: a.inbox, replyTo: ctx.Self()})
}

func (a *accountActor) onLoaded(ctx actor.Context, m loaded) {
	if m.err != nil {
		a.carry(ctx, a.core.LoadFailed(m.err))
		return
	}
	s := a.inbox.take()
	if a.core.Stopped() {
		if s != nil {
			_ = s.Close()
		}
		return
	}
	if s != nil {
		a.session = s
	}
	a.masters = m.cfg.Masters
	in := follower.Loaded{
		Config: follower.Config{Version: m.cfg.ConfigVersion, CloseOnly: protect.CloseOnly(m.cfg.Account.CloseOnly),
			Links: make([]follower.LinkConfig, len(m.cfg.Links))},
		Protection:  follower.Protection{Limits: m.prot.Limits, States: make(map[int64]follower.ProtectionState, len(m.prot.States))},
		WithTickets: m.withTickets,
	}
	for i, l := range m.cfg.Links {
		_, enabled := m.cfg.Masters[l.MasterID]
		in.Config.Links[i] = follower.LinkConfig{ID: l.ID, MasterID: l.MasterID, Magic: l.Magic, Settings: l.Settings, MasterEnabled: enabled}
	}
	for scope, row := range m.prot.States {
		in.Protection.States[scope] = follower.ProtectionState{Scope: scope, State: row.State, ResetGen: row.ResetGen}
	}
	for _, t := range m.tickets {
		in.Tickets = append(in.Tickets, reconcile.TicketMapEntry{LinkID: t.LinkID, MasterTicket: t.MasterTicket, FollowerTicket: t.FollowerTicket, Volume: t.Volume})
	}
	a.carry(ctx, a.core.Loaded(a.at(), in))
	a.masters = nil // only a load changes the masters: not kept for thousands of accounts
}

// report fills rep with this account's status row, and its positions snapshot as last
// seen (when one was read), for the StatusWriter to write through the fence at its own
// pace: due at once when the phase or the error changed or StatusEvery has passed since
// the last report that was, else at the end of that StatusEvery.
func (a *accountActor) report(rep *report) {
	s := a.core.Status() // what the board holds too: effects copies it there first
	rep.status = store.AccountStatus{
		ID: a.id, Epoch: a.epoch, Status: s.Phase.String(), LastError: s.LastError,
		Balance: s.Balance, Equity: s.Equity, EquityUnknown: s.EquityUnknown, At: a.e.now(), LastCopyAt: s.LastCopy,
	}
	if ps, seenAt, ok := a.core.Positions(); ok {
		rep.snap = snapshotUpdate{row: store.PositionsSnapshot{ID: a.id, Epoch: a.epoch, SeenAt: seenAt}, positions: ps} // putReport copies them
		rep.hasSnap = true
	}
	now := a.e.elapsed()
	if now < a.reportNext && s.Phase == a.reportPhase && s.LastError == a.reportErr {
		rep.due = a.reportNext
		return
	}
	rep.due = now
	a.reportNext, a.reportPhase, a.reportErr = now+a.e.cfg.StatusEvery, s.Phase, s.LastError
}

// at is the time of an input to the Core, with whether the account's lease is held now.
// The Core reads the lease only to spare planning on a closed gate; every order it plans
// passes the gate's own fresh check (send).
func (a *accountActor) at() follower.At {
	return follower.At{Now: a.e.now(), Lease: a.gate.HoldsLease()}
}

// repairOffset is account id's first periodic repair after a claim: a fixed point of
// (0, every), spread evenly over the accounts by a multiplicative hash of the id, so that
// thousands of accounts claimed at once do not all repair at once every period.
func repairOffset(id int64, every time.Duration) time.Duration {
	if every <= 0 {
		return 0
	}
	frac := float64(uint32(uint64(id)*2654435761)) / (1 << 32) // Knuth's multiplicative hash
	return max(time.Duration(frac*float64(every)), time.Millisecond)
}
