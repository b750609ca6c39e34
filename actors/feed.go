package actors

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/internal/backoff"
	"github.com/snapcopier/copier/reconcile"
	"github.com/snapcopier/copier/reconcile/follower"
	"github.com/snapcopier/copier/store"
)

// feedConnected, feedClosed and feedRetry drive a MasterFeed's connection from goroutines.
type feedConnected struct {
	session broker.Session
	events  <-chan broker.Event
	err     error
}
type feedClosed struct{ gen int }
type feedRetry struct{}

// feedEvent is one event from the subscription goroutine.
type feedEvent struct {
	gen      int
	ev       broker.Event
	received time.Time // read from the subscription
}

// masterFeed subscribes to one master's events and fans them out to the AccountActors
// that follow it: one shared *masterEvent per event, however many followers.
type masterFeed struct {
	e        *engine
	master   store.Account
	subs     subscribers
	session  broker.Session
	gen      int // subscription generation: a restart starts a new one
	epoch    int64
	seq      int64
	fails    int
	stopped  bool
	cancel   context.CancelFunc
	restarts int
	// dispatched counts the events fanned out (masterEvent.n): followers read it to see
	// that they are behind.
	dispatched atomic.Int64
	// clock estimates the master server's clock offset from every event passed on, for the
	// accounts that subscribe later (follower.Core.MasterAttached): each follower's Core
	// estimates it from the events it gets, but a newly claimed one has none yet.
	clock      follower.ServerClock
	clockState clockState // as last logged
}

// clockState is how a master server's clock stands against the node's, for the operator:
// the feed logs each change.
type clockState int8

const (
	clockInStep clockState = iota // within reconcile.QuoteMaxAge, or not known yet
	clockOff                      // further off, and positions are dated by the offset
	clockWrong                    // off beyond what is trusted: not compensated
)

func clockStateOf(c *follower.ServerClock) clockState {
	switch d := c.Offset(); {
	case !c.Trusted():
		return clockWrong
	case d > reconcile.QuoteMaxAge || d < -reconcile.QuoteMaxAge:
		return clockOff
	}
	return clockInStep
}

// observeClock takes one event into the estimate of the master server's clock and logs a
// change of its state.
func (f *masterFeed) observeClock(serverTime, received time.Time) {
	f.clock.Observe(serverTime, received, received)
	st := clockStateOf(&f.clock)
	if st == f.clockState {
		return
	}
	f.clockState = st
	switch st {
	case clockOff:
		f.e.log.Warn().Int64("master", f.master.ID).Dur("offset", f.clock.Offset()).
			Msg("master's trade server clock is off the node's; its positions are dated by the offset")
	case clockWrong:
		f.e.log.Warn().Int64("master", f.master.ID).
			Msg("master's trade server times are over 10 minutes off the node's: not compensated, so copies of its positions may be skipped as too_old")
	default:
		f.e.log.Info().Int64("master", f.master.ID).Msg("master's trade server clock is back in step with the node's")
	}
}

func newMasterFeed(e *engine, master store.Account) actor.Producer {
	return func() actor.Actor { return &masterFeed{e: e, master: master, subs: subscribers{at: map[string]int{}}} }
}

// Receive implements actor.Actor.
func (f *masterFeed) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		f.connect(ctx)
	case *actor.Stopping:
		f.stopped = true
		if f.cancel != nil {
			f.cancel()
		}
		if f.session != nil {
			_ = f.session.Close()
		}
	case feedSubscribe:
		f.subs.add(m.pid)
		if f.session != nil {
			ctx.Send(m.pid, masterSession{masterID: f.master.ID, session: f.session, epoch: f.epoch, seq: f.seq, clock: f.clock})
		}
	case feedUnsubscribe:
		f.subs.remove(m.pid)
	case feedConnected:
		f.onConnected(ctx, m)
	case *feedEvent:
		if m.gen != f.gen {
			return
		}
		f.epoch, f.seq = m.ev.Epoch, m.ev.Seq
		f.observeClock(m.ev.ServerTime, m.received)
		shared := &masterEvent{masterID: f.master.ID, event: m.ev, received: m.received, n: f.dispatched.Add(1), dispatched: &f.dispatched}
		for _, pid := range f.subs.list {
			ctx.Send(pid, shared)
		}
	case feedClosed:
		if m.gen == f.gen && !f.stopped {
			f.e.log.Warn().Int64("master", f.master.ID).Msg("master feed closed; resubscribing")
			f.resubscribe(ctx)
		}
	case feedRetry:
		f.connect(ctx)
	}
}

// connect opens a session (or reuses the current one) and subscribes, off the mailbox.
func (f *masterFeed) connect(ctx actor.Context) {
	if f.stopped {
		return
	}
	self, root, e, master, sess := ctx.Self(), ctx.ActorSystem().Root, f.e, f.master, f.session
	sctx, cancel := context.WithCancel(context.Background())
	if f.cancel != nil {
		f.cancel()
	}
	f.cancel = cancel
	go func() {
		var m feedConnected
		if sess == nil {
			cctx, ccancel := context.WithTimeout(sctx, 30*time.Second)
			sess, m.err = e.connect(cctx, master)
			ccancel()
		}
		if m.err == nil {
			m.session = sess
			m.events, m.err = sess.Subscribe(sctx)
		}
		root.Send(self, m)
	}()
}

func (f *masterFeed) onConnected(ctx actor.Context, m feedConnected) {
	if f.stopped {
		if m.session != nil {
			_ = m.session.Close()
		}
		return
	}
	if m.err != nil {
		f.fails++
		if m.session != nil && m.session != f.session {
			_ = m.session.Close()
		} else if f.session != nil && f.fails > 2 {
			_ = f.session.Close() // resubscribing keeps failing: start from a new session
			f.session = nil
		}
		f.e.log.Warn().Err(m.err).Int64("master", f.master.ID).Int("attempt", f.fails).Msg("master feed connect failed")
		self, root := ctx.Self(), ctx.ActorSystem().Root
		time.AfterFunc(backoff.Delay(f.fails, 200*time.Millisecond, 15*time.Second), func() { root.Send(self, feedRetry{}) })
		return
	}
	f.fails = 0
	restarted := f.gen > 0
	f.gen++
	f.session, f.epoch, f.seq = m.session, 0, 0
	gen, self, root, events := f.gen, ctx.Self(), ctx.ActorSystem().Root, m.events
	go func() {
		for ev := range events {
			root.Send(self, &feedEvent{gen: gen, ev: ev, received: f.e.now()})
		}
		root.Send(self, feedClosed{gen: gen})
	}()
	if restarted {
		f.restarts++
	}
	for _, pid := range f.subs.list {
		ctx.Send(pid, masterSession{masterID: f.master.ID, session: f.session, restarted: restarted, clock: f.clock})
	}
}

func (f *masterFeed) resubscribe(ctx actor.Context) {
	f.connect(ctx)
}

// subscribers are a feed's AccountActors in the order they subscribed, which is about the
// order their memory was allocated in (claimed and loaded together). A fan-out in that
// order, instead of a map's random one, keeps each account's step near the last one's in
// memory: BenchmarkFanout's engine CPU per order fell by about 0.5 µs (BENCHMARKS.md).
type subscribers struct {
	list []*actor.PID
	at   map[string]int // index in list, by PID id
}

// add appends pid unless it is subscribed already.
func (s *subscribers) add(pid *actor.PID) {
	if i, ok := s.at[pid.Id]; ok {
		s.list[i] = pid
		return
	}
	s.at[pid.Id] = len(s.list)
	s.list = append(s.list, pid)
}

// remove drops pid, moving the last subscriber into its place: one unsubscribe costs the
// same at any size (a release of 10,000 accounts unsubscribes them all).
func (s *subscribers) remove(pid *actor.PID) {
	i, ok := s.at[pid.Id]
	if !ok {
		return
	}
	delete(s.at, pid.Id)
	last := len(s.list) - 1
	if i != last {
		s.list[i] = s.list[last]
		s.at[s.list[i].Id] = i
	}
	s.list[last] = nil
	s.list = s.list[:last]
}
