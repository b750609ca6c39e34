package actors

import (
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/reconcile/follower"
	"github.com/snapcopier/copier/store"
)

// accountTick is sent by the Supervisor after each committed lease cycle to every
// AccountActor that a tick can do something for (follower.Core.NextTick): a dirty account
// whose gate is open again reconciles; an idle one reconciles when its periodic repair is
// due.
type accountTick struct{}

// configChanged tells an AccountActor that its account or links changed.
type configChanged struct{ version int64 }

// followMasters is an AccountActor's current set of masters, sent to the Supervisor
// after every configuration load (an empty set on stop).
type followMasters struct {
	accountID int64
	pid       *actor.PID
	masters   map[int64]store.Account
}

// feedSubscribe and feedUnsubscribe add and remove a follower of a MasterFeed.
type feedSubscribe struct{ pid *actor.PID }
type feedUnsubscribe struct{ pid *actor.PID }

// masterEvent is one master feed event, shared (not copied) by every follower.
type masterEvent struct {
	masterID int64
	event    broker.Event
	received time.Time // when the node's feed received it: the start of the node's part of the latency
	// n numbers the feed's fan-outs; dispatched is the feed's latest n. A follower that
	// takes up event n while dispatched > n has later events of this master waiting in
	// its mailbox: it is behind, and holds the event back to plan the backlog at once.
	n          int64
	dispatched *atomic.Int64
}

// behind reports whether later events of the same master were already sent out.
func (m *masterEvent) behind() bool { return m.dispatched != nil && m.dispatched.Load() > m.n }

// flushEvents steps follower.Core.FlushEvents: it queues behind the events waiting.
type flushEvents struct{}

// masterSession tells a follower that its master's feed is (re)connected. restarted says
// the feed started a new subscription, so events may have been missed; epoch/seq are the
// last event seen on the current subscription (0 when none yet).
type masterSession struct {
	masterID  int64
	session   broker.Session
	restarted bool
	epoch     int64
	seq       int64
	clock     follower.ServerClock // the feed's estimate of the master server's clock offset
}

// respawn restarts a crashed AccountActor after its backoff.
type respawn struct {
	id    int64
	epoch int64
}
