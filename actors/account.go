package actors

import (
	"context"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/leasekeeper"
	"github.com/snapcopier/copier/reconcile"
	"github.com/snapcopier/copier/reconcile/protect"
	"github.com/snapcopier/copier/store"
)

// Reconcile causes, for logs and metrics.
const (
	causeStart    = "start"
	causeGap      = "gap"
	causeEpoch    = "unknown_epoch"
	causeRestart  = "feed_restart"
	causeGate     = "gate_reopened"
	causeUnknown  = "unknown_outcome"
	causePeriodic = "periodic"
	causeConfig   = "config"
	causeAgain    = "again"
	// causeOrderFailed: an order failed without executing (disconnected, market closed).
	causeOrderFailed = "order_failed"
)

// linkState is one enabled link of the follower.
type linkState struct {
	row  store.Link
	link reconcile.Link
	// closeOnly is the mode the operator set (the link's and the follower's, stricter of
	// the two); link.Settings.Protect.CloseOnly adds what stop-outs impose (applyProtection).
	closeOnly protect.CloseOnly
}

// masterView is what a follower knows of one master: its feed position and its last
// fetched state, kept current by the feed's events.
type masterView struct {
	account        store.Account
	session        broker.Session
	known          bool // epoch/seq below are meaningful
	expectNewEpoch bool // the feed restarted: seq 1 of a new epoch is in order
	epoch, seq     int64
	state          reconcile.AccountState
	fetched        bool
}

// loaded carries the result of loading configuration and connecting, done off the mailbox.
type loaded struct {
	cfg     store.FollowerConfig
	prot    store.Protection
	tickets []store.TicketRow // first load only (withTickets)
	session broker.Session
	err     error
	// withTickets: the ticket map was read too. Only the first load of an ownership reads
	// it: afterwards the actor's own map is ahead of the database, whose writes are queued
	// (a reload that replaced it lost the entries not yet written, and a tombstone lost is a
	// closed copy opened again).
	withTickets bool
}

type retryLoad struct{}

// accountActor copies its masters' trades to one follower account.
type accountActor struct {
	e     *engine
	id    int64
	epoch int64
	gate  *leasekeeper.Gate
	board *accountBoard

	version  int64
	session  broker.Session
	links    []linkState
	masters  map[int64]*masterView
	follower reconcile.AccountState
	fetched  bool                                         // follower state came from a reconcile
	tickets  map[int64]map[int64]reconcile.TicketMapEntry // link → master ticket → entry
	sent     requestIDs                                   // request ids of orders: see requestID

	loading     bool
	loadFails   int
	reconciling bool
	reconCause  string // cause of the reconcile in flight
	again       bool
	againCause  string // why the next reconcile is due, when a cause arrived during one
	dirty       bool   // a reconcile is due
	lastRecon   time.Time
	stopped     bool
	tokenRaised bool      // this epoch's token reached the trade server (Session.Fence)
	seenAt      time.Time // when the follower's positions were last read or changed by an order
	orderFails  int       // orders failed in a row without executing, for the repair backoff
	repairCause string    // a failed order asked for a reconcile (repairDue) that has not started

	guards        map[int64]*guard // stop-outs by scope (0: the follower's own, else the link's)
	protGen       int64            // bumped whenever a link's effective close-only mode changes
	reconProtGen  int64            // protGen when the reconcile in flight was asked for
	equityTimer   bool             // an equityDue is scheduled
	equityReading bool             // an equity read is in flight
}

func newAccountActor(e *engine, id, epoch int64, gate *leasekeeper.Gate) actor.Producer {
	return func() actor.Actor {
		return &accountActor{e: e, id: id, epoch: epoch, gate: gate, board: e.board.get(id), masters: map[int64]*masterView{}}
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
	switch m := ctx.Message().(type) {
	case *actor.Started:
		a.board.update(func(s *AccountStatus) { s.Epoch, s.Phase = a.epoch, PhaseStarting })
		a.dirty = true
		a.load(ctx)
	case *actor.Stopping:
		a.stop(ctx)
	case retryLoad:
		a.load(ctx)
	case loaded:
		a.onLoaded(ctx, m)
	case configChanged:
		if m.version != a.version {
			a.dirty = true
			a.load(ctx)
		}
	case masterSession:
		a.onMasterSession(ctx, m)
	case *masterEvent:
		a.onEvent(ctx, m)
	case reconcile.Response:
		a.onReconciled(ctx, m)
	case accountTick:
		a.onTick(ctx)
	case equityDue:
		a.onEquityDue(ctx)
	case equityRead:
		a.onEquityRead(ctx, m)
	case repairDue:
		if a.repairCause != "" { // not already taken up by a reconcile
			a.dirty = true
			a.maybeReconcile(ctx, a.repairCause)
		}
	}
}

// load reads the configuration and connects the follower's session off the mailbox.
func (a *accountActor) load(ctx actor.Context) {
	if a.loading || a.stopped {
		return
	}
	a.loading = true
	self, root, e, id, old := ctx.Self(), ctx.ActorSystem().Root, a.e, a.id, a.session
	first := a.version == 0
	go func() {
		lctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var m loaded
		select {
		case e.loads <- struct{}{}:
			m.cfg, m.err = store.LoadFollowerConfig(lctx, e.pool, id)
			if m.err == nil {
				m.prot, m.err = store.LoadProtection(lctx, e.pool, id)
			}
			if m.err == nil && first {
				m.tickets, m.err = store.OpenTickets(lctx, e.pool, id)
				m.withTickets = m.err == nil
			}
			<-e.loads
		case <-lctx.Done():
			m.err = fmt.Errorf("waiting to load: %w", lctx.Err())
		}
		if m.err == nil && old == nil {
			m.session, m.err = e.connect(lctx, m.cfg.Account)
		}
		root.Send(self, m)
	}()
}

func (a *accountActor) onLoaded(ctx actor.Context, m loaded) {
	a.loading = false
	if m.err != nil {
		a.loadFails++
		a.board.update(func(s *AccountStatus) { s.Phase, s.LastError = PhaseFailed, m.err.Error() })
		a.e.log.Warn().Err(m.err).Int64("account", a.id).Msg("account load failed; retrying")
		a.status(ctx)
		self, root := ctx.Self(), ctx.ActorSystem().Root
		time.AfterFunc(backoff(a.loadFails, 500*time.Millisecond, 30*time.Second), func() { root.Send(self, retryLoad{}) })
		return
	}
	if a.stopped {
		if m.session != nil {
			_ = m.session.Close()
		}
		return
	}
	a.loadFails = 0
	if m.session != nil {
		a.session = m.session
	}
	cause := causeStart
	if a.version != 0 && a.version != m.cfg.ConfigVersion {
		cause = causeConfig // a reload: counted once, under config
	}
	a.version = m.cfg.ConfigVersion
	a.links = a.links[:0]
	masters := map[int64]store.Account{}
	for _, l := range m.cfg.Links {
		master, ok := m.cfg.Masters[l.MasterID]
		if !ok {
			continue // master switched off: its copies stay as they are
		}
		settings, err := reconcile.ParseSettings(l.Settings)
		if err != nil {
			a.board.update(func(s *AccountStatus) { s.LastError = fmt.Sprintf("link %d: %v", l.ID, err) })
			continue
		}
		// The follower's own close-only mode holds on every link: the planner applies it.
		settings.Protect.CloseOnly = protect.Stricter(settings.Protect.CloseOnly, protect.CloseOnly(m.cfg.Account.CloseOnly))
		link, err := reconcile.Link{ID: l.ID, Magic: l.Magic, Settings: settings}.Validated()
		if err != nil {
			a.board.update(func(s *AccountStatus) { s.LastError = fmt.Sprintf("link %d: %v", l.ID, err) })
			continue
		}
		a.links = append(a.links, linkState{row: l, link: link, closeOnly: settings.Protect.CloseOnly})
		masters[l.MasterID] = master
	}
	for id := range a.masters {
		if _, ok := masters[id]; !ok {
			delete(a.masters, id)
		}
	}
	for id, acc := range masters {
		if _, ok := a.masters[id]; !ok {
			a.masters[id] = &masterView{account: acc}
		}
	}
	if m.withTickets {
		a.tickets = map[int64]map[int64]reconcile.TicketMapEntry{}
		for _, t := range m.tickets {
			a.ticketsOf(t.LinkID)[t.MasterTicket] = reconcile.TicketMapEntry{LinkID: t.LinkID, MasterTicket: t.MasterTicket, FollowerTicket: t.FollowerTicket, Volume: t.Volume}
		}
	}
	if err := a.loadGuards(m.prot); err != nil {
		a.board.update(func(s *AccountStatus) { s.LastError = err.Error() })
		a.e.log.Error().Err(err).Int64("account", a.id).Msg("protections unreadable; copying nothing new")
	}
	a.applyProtection(a.e.now())
	a.scheduleEquity(ctx)
	ctx.Send(a.e.supervisor, followMasters{accountID: a.id, pid: ctx.Self(), masters: masters})
	a.signal(Signal{Kind: SignalLoaded, ConfigVersion: a.version, Links: len(a.links)})
	a.dirty = true
	a.maybeReconcile(ctx, cause)
}

func (a *accountActor) ticketsOf(link int64) map[int64]reconcile.TicketMapEntry {
	m := a.tickets[link]
	if m == nil {
		m = map[int64]reconcile.TicketMapEntry{}
		a.tickets[link] = m
	}
	return m
}

func (a *accountActor) onMasterSession(ctx actor.Context, m masterSession) {
	mv := a.masters[m.masterID]
	if mv == nil {
		return
	}
	mv.session = m.session
	a.signal(Signal{Kind: SignalFeedAttached, Master: m.masterID, Restarted: m.restarted})
	if m.restarted {
		mv.known, mv.expectNewEpoch = false, true
		a.dirty = true
		a.maybeReconcile(ctx, causeRestart)
		return
	}
	if m.epoch != 0 {
		mv.known, mv.epoch, mv.seq = true, m.epoch, m.seq
	} else {
		mv.known, mv.expectNewEpoch = false, true
	}
	a.maybeReconcile(ctx, causeStart)
}

// onEvent applies an in-order event at once; anything else marks the account dirty.
func (a *accountActor) onEvent(ctx actor.Context, m *masterEvent) {
	mv := a.masters[m.masterID]
	if mv == nil || a.stopped {
		return
	}
	ev := m.event
	cause := ""
	switch {
	case mv.known && ev.Epoch == mv.epoch && ev.Seq == mv.seq+1:
	case mv.known && ev.Epoch == mv.epoch && ev.Seq <= mv.seq:
		return // already seen
	case !mv.known && mv.expectNewEpoch && ev.Seq == 1:
	case mv.known && ev.Epoch == mv.epoch, !mv.known && mv.expectNewEpoch:
		// A lost event of a known epoch, or of a new subscription (whose events start at
		// Seq 1): a gap, not an unknown epoch.
		cause = causeGap
	default:
		cause = causeEpoch
	}
	mv.known, mv.expectNewEpoch, mv.epoch, mv.seq = true, false, ev.Epoch, ev.Seq
	if cause != "" {
		a.dirty = true
		a.maybeReconcile(ctx, cause)
		return
	}
	if a.reconciling {
		a.again = true // the running reconcile may predate this event
		return
	}
	if a.dirty || !a.fetched || !mv.fetched {
		a.maybeReconcile(ctx, causeGap)
		return
	}
	applyEvent(&mv.state, ev)
	sent := false
	for _, l := range a.links {
		if l.row.MasterID != m.masterID {
			continue
		}
		res := reconcile.PlanEvent(ev, a.input(l, mv))
		sent = sent || len(res.Actions) > 0
		if !a.execute(ctx, l, res, &copyOrigin{serverTime: ev.ServerTime, received: m.received, kind: ev.Kind, master: ev.Position}) {
			break
		}
	}
	if sent {
		a.status(ctx) // the positions changed: the writer keeps the latest, at its pace
	}
}

// applyEvent keeps a master's cached positions in step with its feed.
func applyEvent(st *reconcile.AccountState, ev broker.Event) {
	p := ev.Position
	for i := range st.Positions {
		if st.Positions[i].Ticket == p.Ticket {
			if ev.Kind == broker.Closed {
				st.Positions = append(st.Positions[:i], st.Positions[i+1:]...)
			} else {
				st.Positions[i] = p
			}
			return
		}
	}
	if ev.Kind != broker.Closed {
		st.Positions = append(st.Positions, p)
	}
}

func (a *accountActor) input(l linkState, mv *masterView) reconcile.Input {
	tm := make([]reconcile.TicketMapEntry, 0, len(a.tickets[l.row.ID]))
	for _, t := range a.tickets[l.row.ID] {
		tm = append(tm, t)
	}
	return reconcile.Input{Master: mv.state, Follower: a.follower, Link: l.link, TicketMap: tm, Now: a.e.now()}
}

// maybeReconcile asks the Reconciler for a plan when the account is dirty, loaded, all its
// masters are connected, and its gate is open (a closed gate would drop the plan anyway).
func (a *accountActor) maybeReconcile(ctx actor.Context, cause string) {
	if a.stopped || a.loading || a.session == nil || !a.dirty {
		return
	}
	if a.reconciling {
		a.again = true
		if a.againCause == "" {
			a.againCause = cause // the rerun is counted under what caused it
		}
		a.repairCause = ""
		return
	}
	if !a.gate.HoldsLease() {
		a.board.update(func(s *AccountStatus) { s.Phase = PhaseDirty })
		return // the next accountTick after a renewal retries
	}
	for _, mv := range a.masters {
		if mv.session == nil {
			return // wait for the feed to connect; masterSession retries
		}
	}
	if !a.raiseToken() {
		a.board.update(func(s *AccountStatus) { s.Phase = PhaseDirty })
		return // the next accountTick retries
	}
	req := reconcile.Request{AccountID: a.id, Follower: a.session, Masters: map[int64]broker.Session{}, Cause: cause, ReplyTo: ctx.Self()}
	for id, mv := range a.masters {
		if mv.session == nil {
			return // wait for the feed to connect; masterSession retries
		}
		req.Masters[id] = mv.session
	}
	for _, l := range a.links {
		tm := make([]reconcile.TicketMapEntry, 0, len(a.tickets[l.row.ID]))
		for _, t := range a.tickets[l.row.ID] {
			tm = append(tm, t)
		}
		req.Links = append(req.Links, reconcile.LinkRequest{MasterID: l.row.MasterID, Link: l.link, TicketMap: tm})
	}
	a.countReconcile(cause)
	a.reconciling, a.reconCause, a.again, a.againCause, a.dirty, a.repairCause = true, cause, false, "", false, ""
	a.reconProtGen = a.protGen
	a.signal(Signal{Kind: SignalReconcileStarted, Cause: cause})
	a.lastRecon = a.e.now()
	a.board.update(func(s *AccountStatus) { s.Phase, s.Reconciles = PhaseReconciling, s.Reconciles+1 })
	ctx.Send(a.e.reconciler, req)
}

func (a *accountActor) countReconcile(cause string) {
	m := a.e.metrics
	switch cause {
	case causeGap:
		m.ReconcilesGap.Add(1)
	case causeAgain:
		m.ReconcilesChained.Add(1)
	case causeEpoch, causeRestart:
		m.ReconcilesRestart.Add(1)
	case causeStart:
		m.ReconcilesStart.Add(1)
	case causeGate:
		m.ReconcilesGate.Add(1)
	case causeUnknown:
		m.ReconcilesUnknown.Add(1)
	case causeOrderFailed:
		m.ReconcilesOrderFailed.Add(1)
	case causePeriodic:
		m.ReconcilesPeriodic.Add(1)
	case causeConfig:
		m.ReconcilesConfig.Add(1)
	case causeProtection:
		m.ReconcilesProtection.Add(1)
	}
	a.e.log.Debug().Int64("account", a.id).Int64("epoch", a.epoch).Str("cause", cause).Msg("reconcile")
}

func (a *accountActor) onReconciled(ctx actor.Context, r reconcile.Response) {
	a.reconciling = false
	if a.stopped {
		return
	}
	if r.Err != nil {
		a.dirty = true
		a.board.update(func(s *AccountStatus) { s.Phase, s.LastError = PhaseDirty, r.Err.Error() })
		a.e.log.Warn().Err(r.Err).Int64("account", a.id).Msg("reconcile failed")
		a.status(ctx)
		a.signal(Signal{Kind: SignalReconcileDone, Cause: a.reconCause, Err: r.Err})
		return
	}
	a.follower, a.fetched, a.seenAt = r.Follower, true, time.Now()
	for id, st := range r.Masters {
		if mv := a.masters[id]; mv != nil {
			mv.state, mv.fetched = st, true
		}
	}
	a.board.update(func(s *AccountStatus) {
		s.Balance, s.Equity, s.Positions = r.Follower.Info.Balance, r.Follower.Info.Equity, len(r.Follower.Positions)
	})
	a.observeEquity(ctx, r.Follower.Info.Equity)
	ok := true
	if a.reconProtGen != a.protGen {
		// A stop-out started or ended since the plans were made (this reading or one
		// during the reconcile): they may copy what is no longer allowed. Plan again.
		ok = false
		a.again, a.againCause = true, causeProtection
	}
	for _, l := range a.links {
		if !ok {
			break
		}
		res, found := r.Plans[l.row.ID]
		if !found {
			continue
		}
		if !a.execute(ctx, l, res, nil) {
			ok = false
			break
		}
	}
	if ok && !a.dirty {
		a.board.update(func(s *AccountStatus) { s.Phase = PhaseCopying })
	}
	a.status(ctx)
	a.signal(Signal{Kind: SignalReconcileDone, Cause: a.reconCause, Idle: !a.again && !a.dirty})
	if a.again {
		cause := a.againCause
		if cause == "" {
			cause = causeAgain
		}
		a.dirty = true
		a.maybeReconcile(ctx, cause)
	}
}

func (a *accountActor) onTick(ctx actor.Context) {
	if a.loading || a.session == nil || a.reconciling {
		return // a running reconcile already repairs; chaining another would loop
	}
	if a.dirty && a.gate.HoldsLease() {
		cause := causeGate
		if a.repairCause != "" {
			cause = a.repairCause // a failed order asked first
		}
		a.maybeReconcile(ctx, cause)
		return
	}
	if every := a.e.cfg.ReconcileEvery; every > 0 && !a.lastRecon.IsZero() && a.e.now().Sub(a.lastRecon) >= every {
		a.dirty = true
		a.maybeReconcile(ctx, causePeriodic)
	}
}

// status queues this account's status, and its positions as last seen, for the
// StatusWriter (which writes both through the fence at its own pace).
func (a *accountActor) status(ctx actor.Context) {
	s := a.board.fields()
	now := time.Now()
	ctx.Send(a.e.writer, statusUpdate{row: store.AccountStatus{
		ID: a.id, Epoch: a.epoch, Status: s.Phase.String(), LastError: s.LastError,
		Balance: s.Balance, Equity: s.Equity, At: now, LastCopyAt: s.LastCopy,
	}})
	if a.fetched {
		ctx.Send(a.e.writer, snapshotUpdate{row: store.PositionsSnapshot{
			ID: a.id, Epoch: a.epoch, Positions: encodeSnapshot(a.follower.Positions), SeenAt: a.seenAt,
		}})
	}
}

func (a *accountActor) stop(ctx actor.Context) {
	a.stopped = true
	ctx.Send(a.e.supervisor, followMasters{accountID: a.id, pid: ctx.Self()})
	if a.session != nil {
		_ = a.session.Close()
		a.session = nil
	}
}

// backoff is min(base·2^(n−1), max).
func backoff(n int, base, max time.Duration) time.Duration {
	d := base
	for i := 1; i < n && d < max; i++ {
		d *= 2
	}
	return min(d, max)
}
