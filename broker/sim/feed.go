package sim

import (
	"context"
	"slices"
	"time"

	"github.com/snapcopier/copier/broker"
)

// subscription is one feed stream of one account's position events. Every field but sess
// is guarded by the account's lock; events are sent only under it, which keeps each
// stream in order and makes closing the channel safe.
type subscription struct {
	acct   *account
	sess   *session
	ch     chan broker.Event
	epoch  int64
	seq    int64 // last Seq used
	closed bool
	stop   func() bool // stops the context watcher
}

// subscribeLocked opens a feed on a for sess. It fails when the session has closed.
func (s *Server) subscribeLocked(ctx context.Context, a *account, sess *session) (*subscription, error) {
	sub := &subscription{
		acct:  a,
		sess:  sess,
		ch:    make(chan broker.Event, s.cfg.FeedBuffer),
		epoch: s.epochs.Add(1),
	}
	if !sess.track(sub) {
		return nil, errSessionClosed()
	}
	sub.stop = context.AfterFunc(ctx, func() {
		a.mu.Lock()
		defer a.mu.Unlock()
		s.closeSubLocked(sub)
	})
	a.subs = append(a.subs, sub)
	return sub, nil
}

// closeSubLocked ends a subscription: its channel closes after the events already in it.
func (s *Server) closeSubLocked(sub *subscription) {
	if sub.closed {
		return
	}
	sub.closed = true
	close(sub.ch)
	a := sub.acct
	if i := slices.Index(a.subs, sub); i >= 0 {
		a.subs = slices.Delete(a.subs, i, i+1)
	}
	if sub.stop != nil {
		sub.stop()
	}
	sub.sess.untrack(sub)
}

// dropFeedsLocked closes every subscription of a, as a dropped connection would.
func (s *Server) dropFeedsLocked(a *account) {
	for len(a.subs) > 0 {
		s.closeSubLocked(a.subs[0])
	}
}

// publishLocked sends events to every subscription of a. Each subscription numbers every
// event; one drawn as dropped (f.DropEventRate) uses its Seq but is not sent, so the
// subscriber sees a gap. A subscription whose buffer is full is closed instead of
// blocking the server: its consumer resubscribes and gets a new epoch.
func (s *Server) publishLocked(a *account, now time.Time, f broker.Faults, events []broker.Event) {
	if len(a.subs) == 0 {
		return
	}
	funds := s.fundsLocked(a, now) // after all of events: each is published after the order
	for _, ev := range events {
		ev.Login = a.login
		ev.ServerTime = now
		ev.Funds = funds
		for i := 0; i < len(a.subs); {
			sub := a.subs[i]
			sub.seq++
			if chance(a.rng, f.DropEventRate) {
				i++
				continue
			}
			ev.Epoch, ev.Seq = sub.epoch, sub.seq
			select {
			case sub.ch <- ev:
				i++
			default:
				s.closeSubLocked(sub) // removes a.subs[i]; the next one moves into i
			}
		}
	}
}
