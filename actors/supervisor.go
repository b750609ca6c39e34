package actors

import (
	"slices"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/snapcopier/copier/internal/backoff"
	"github.com/snapcopier/copier/leasekeeper"
)

type child struct {
	pid     *actor.PID
	epoch   int64
	version int64
	gate    *leasekeeper.Gate
	crashes int
	tickAt  *atomic.Int64 // when the account could next use a tick (accountActor.tickAt)
}

type feedRef struct {
	pid       *actor.PID
	followers map[int64]bool
}

// supervisor keeps one AccountActor per owned follower and one MasterFeed per master
// that those followers need.
type supervisor struct {
	e        *engine
	children map[int64]*child
	byPID    map[string]int64
	// inFlight is each living account actor's report of an order of unknown outcome it
	// ended with (by PID); heldBack keeps, per account, until when (gate clock) such an
	// order of an ended actor may still execute: its lease must not be released before.
	inFlight map[string]*atomic.Int64
	heldBack map[int64]time.Time
	owned    map[int64]leasekeeper.OwnedAccount
	crashes  map[int64]int
	follows  map[int64]map[int64]bool // account → masters
	feeds    map[int64]*feedRef
	stopping bool
	stopFor  *actor.PID
	handoffs []*pendingStop // StopSome requests waiting for their actors to end
}

// pendingStop is one StopSome: its accounts, the actors still to end, and who to tell.
type pendingStop struct {
	ids  []int64
	pids map[string]bool
	to   *actor.PID
}

// stopDeadline ends the wait of a StopAccounts: it is answered with what has ended.
type stopDeadline struct{}

func newSupervisor(e *engine) actor.Producer {
	return func() actor.Actor {
		return &supervisor{e: e, children: map[int64]*child{}, byPID: map[string]int64{}, crashes: map[int64]int{},
			follows: map[int64]map[int64]bool{}, feeds: map[int64]*feedRef{}, inFlight: map[string]*atomic.Int64{}, heldBack: map[int64]time.Time{}}
	}
}

// stopOnFailure stops a crashed child; the supervisor restarts it itself with backoff.
func stopOnFailure() actor.SupervisorStrategy {
	return actor.NewOneForOneStrategy(0, time.Second, func(any) actor.Directive { return actor.StopDirective })
}

// Receive implements actor.Actor.
func (s *supervisor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case leasekeeper.Owned:
		if !s.stopping {
			s.onOwned(ctx, m)
		}
	case followMasters:
		s.onFollow(ctx, m)
	case *actor.Terminated:
		s.onTerminated(ctx, m)
	case respawn:
		if o, ok := s.owned[m.id]; ok && o.Epoch == m.epoch && s.children[m.id] == nil && !s.stopping {
			s.spawn(ctx, m.id, o)
		}
	case leasekeeper.StopSome:
		s.stopSome(ctx, m)
	case leasekeeper.StopAccounts:
		s.stopping, s.stopFor = true, ctx.Sender()
		for id, c := range s.children {
			ctx.Stop(c.pid)
			delete(s.children, id)
		}
		if !m.By.IsZero() {
			self, root := ctx.Self(), ctx.ActorSystem().Root
			time.AfterFunc(time.Until(m.By), func() { root.Send(self, stopDeadline{}) })
		}
		s.maybeStopped(ctx)
	case stopDeadline:
		s.answerStop(ctx)
	}
}

func (s *supervisor) onOwned(ctx actor.Context, m leasekeeper.Owned) {
	s.owned = m.Accounts
	for id, c := range s.children {
		o, ok := m.Accounts[id]
		if !ok || o.Epoch != c.epoch {
			// Lost (or lost and claimed again): stop it; its session closes on Stopping. It
			// leaves the snapshot now, not when it has finished stopping.
			ctx.Stop(c.pid)
			delete(s.children, id)
			if !ok {
				s.e.board.remove(id)
			}
			delete(s.crashes, id)
		}
	}
	for id, o := range m.Accounts {
		c := s.children[id]
		switch {
		case c == nil:
			if s.crashes[id] == 0 {
				s.spawn(ctx, id, o)
			}
		case o.ConfigVersion != c.version:
			c.version = o.ConfigVersion
			ctx.Send(c.pid, configChanged{version: o.ConfigVersion})
		}
	}
	// Only the accounts a tick can do something for: at 5,000 accounts a node and a lease
	// cycle a second, a tick to every account was a sixth of the node's CPU.
	now := s.e.now()
	for _, c := range s.children {
		if tickDue(c.tickAt.Load(), now) {
			ctx.Send(c.pid, accountTick{})
		}
	}
}

func (s *supervisor) spawn(ctx actor.Context, id int64, o leasekeeper.OwnedAccount) {
	inFlight, tickAt := new(atomic.Int64), new(atomic.Int64) // tickAt: tickAlways until the actor says
	props := actor.PropsFromProducer(newAccountActor(s.e, id, o.Epoch, o.Gate, inFlight, tickAt), actor.WithDispatcher(mailboxDispatcher()))
	pid := ctx.Spawn(props)
	s.inFlight[pid.Id] = inFlight
	s.children[id] = &child{pid: pid, epoch: o.Epoch, version: o.ConfigVersion, gate: o.Gate, tickAt: tickAt}
	s.byPID[pid.Id] = id
	b := s.e.board.get(id)
	b.gate.Store(o.Gate)
	b.update(func(st *AccountStatus) { st.Epoch = o.Epoch })
}

func (s *supervisor) onTerminated(ctx actor.Context, m *actor.Terminated) {
	id, ok := s.byPID[m.Who.Id]
	if !ok {
		return // a master feed
	}
	delete(s.byPID, m.Who.Id)
	if n := s.inFlight[m.Who.Id].Load(); n != 0 {
		if until := time.Unix(0, n); until.After(s.heldBack[id]) {
			s.heldBack[id] = until
		}
	}
	delete(s.inFlight, m.Who.Id)
	s.unfollow(ctx, id, m.Who)
	s.handoffs = slices.DeleteFunc(s.handoffs, func(p *pendingStop) bool {
		delete(p.pids, m.Who.Id)
		if len(p.pids) == 0 {
			ctx.Send(p.to, leasekeeper.SomeStopped{HeldBack: s.heldBackOf(p.ids)})
			return true
		}
		return false
	})
	if c := s.children[id]; c != nil && c.pid.Id == m.Who.Id {
		// Still owned and not stopped by us: it crashed. Restart with growing backoff.
		delete(s.children, id)
		s.crashes[id]++
		n, epoch := s.crashes[id], c.epoch
		self, root := ctx.Self(), ctx.ActorSystem().Root
		time.AfterFunc(backoff.Delay(n, 200*time.Millisecond, 30*time.Second), func() {
			root.Send(self, respawn{id: id, epoch: epoch})
		})
		return
	}
	if _, owned := s.owned[id]; !owned || s.stopping {
		s.e.board.remove(id)
	}
	s.maybeStopped(ctx)
}

// stopSome stops and forgets accounts the node hands off, and answers once every actor of
// theirs has ended (an older one still stopping included): only then may their leases be
// released.
func (s *supervisor) stopSome(ctx actor.Context, m leasekeeper.StopSome) {
	p := &pendingStop{ids: m.IDs, pids: map[string]bool{}, to: ctx.Sender()}
	ids := map[int64]bool{}
	for _, id := range m.IDs {
		ids[id] = true
		delete(s.owned, id)
		delete(s.crashes, id)
		if c := s.children[id]; c != nil {
			ctx.Stop(c.pid)
			delete(s.children, id)
		}
		s.e.board.remove(id)
	}
	for pid, id := range s.byPID {
		if ids[id] {
			p.pids[pid] = true
		}
	}
	if len(p.pids) == 0 {
		ctx.Respond(leasekeeper.SomeStopped{HeldBack: s.heldBackOf(m.IDs)})
		return
	}
	s.handoffs = append(s.handoffs, p)
}

func (s *supervisor) maybeStopped(ctx actor.Context) {
	if s.stopping && len(s.byPID) == 0 && s.stopFor != nil {
		for id, f := range s.feeds {
			ctx.Stop(f.pid)
			delete(s.feeds, id)
		}
		s.answerStop(ctx)
	}
}

// answerStop answers StopAccounts, once, with the accounts whose actors have not ended
// and those held back by an order that may still execute: neither may be released.
func (s *supervisor) answerStop(ctx actor.Context) {
	if s.stopFor == nil {
		return
	}
	var running []int64
	seen := map[int64]bool{}
	for _, id := range s.byPID {
		if !seen[id] {
			seen[id] = true
			running = append(running, id)
		}
	}
	slices.Sort(running)
	ctx.Send(s.stopFor, leasekeeper.AccountsStopped{Running: running, HeldBack: s.heldBackOf(nil)})
	s.stopFor = nil
}

// heldBackOf returns, of ids (nil: every account), those whose ended actors left an
// order of unknown outcome that may still execute, and until when; it forgets the ones
// whose moment has passed.
func (s *supervisor) heldBackOf(ids []int64) map[int64]time.Time {
	now := s.e.clock.Now()
	out := map[int64]time.Time{}
	for id, until := range s.heldBack {
		if !now.Before(until) {
			delete(s.heldBack, id)
		} else if ids == nil || slices.Contains(ids, id) {
			out[id] = until
		}
	}
	return out
}

// onFollow keeps the master feeds reference-counted by their followers.
func (s *supervisor) onFollow(ctx actor.Context, m followMasters) {
	if c := s.children[m.accountID]; c == nil || c.pid.Id != m.pid.Id {
		if len(m.masters) > 0 {
			return // a stale actor
		}
	}
	if len(m.masters) > 0 {
		delete(s.crashes, m.accountID) // it loaded: the crash loop is over
	}
	old := s.follows[m.accountID]
	now := map[int64]bool{}
	for id, acc := range m.masters {
		now[id] = true
		f := s.feeds[id]
		if f == nil {
			f = &feedRef{pid: ctx.Spawn(actor.PropsFromProducer(newMasterFeed(s.e, acc))), followers: map[int64]bool{}}
			s.feeds[id] = f
		}
		f.followers[m.accountID] = true
		ctx.Send(f.pid, feedSubscribe{pid: m.pid})
	}
	for id := range old {
		if !now[id] {
			s.dropFollower(ctx, id, m.accountID, m.pid)
		}
	}
	if len(now) == 0 {
		delete(s.follows, m.accountID)
	} else {
		s.follows[m.accountID] = now
	}
}

func (s *supervisor) unfollow(ctx actor.Context, account int64, pid *actor.PID) {
	for id := range s.follows[account] {
		s.dropFollower(ctx, id, account, pid)
	}
	delete(s.follows, account)
}

func (s *supervisor) dropFollower(ctx actor.Context, master, account int64, pid *actor.PID) {
	f := s.feeds[master]
	if f == nil {
		return
	}
	ctx.Send(f.pid, feedUnsubscribe{pid: pid})
	delete(f.followers, account)
	if len(f.followers) == 0 {
		ctx.Stop(f.pid)
		delete(s.feeds, master)
	}
}
