package bridge

import (
	"context"
	"sync"

	"github.com/snapcopier/copier/broker"
)

// clientSub is one subscription: the channel its consumer reads and what must be undone
// when it ends. It ends exactly once, for whichever reason comes first: the consumer's
// context, the session's Close, the server's sub_end, a full buffer or the connection's
// end.
type clientSub struct {
	id   uint64
	cc   *clientConn
	sess *session

	mu     sync.Mutex
	ch     chan broker.Event
	ended  bool
	unhook func() bool // stops the context watch
}

// Subscribe implements broker.Session. Events are buffered per subscription
// (ClientOptions.SubscriptionBuffer); when the consumer falls that far behind, the
// subscription ends and its channel closes, like on a drop: subscribe again and
// reconcile.
func (s *session) Subscribe(ctx context.Context) (<-chan broker.Event, error) {
	rctx, cancel := s.c.bound(ctx)
	defer cancel()
	cc, id, err := s.attach(rctx)
	if err != nil {
		return nil, err
	}
	sub := &clientSub{id: s.c.ids.Add(1), cc: cc, sess: s, ch: make(chan broker.Event, s.c.opts.SubscriptionBuffer)}
	if !cc.addSub(sub) {
		return nil, cc.disconnected(methodSubscribe)
	}
	if !s.addSub(sub) {
		cc.removeSub(sub.id)
		return nil, s.errClosed()
	}
	if err := cc.do(rctx, methodSubscribe, id, wireSubscribe{Sub: sub.id}, nil); err != nil {
		sub.end(true) // in case the server subscribed after all
		return nil, err
	}
	sub.watch(ctx)
	return sub.ch, nil
}

func (s *session) addSub(sub *clientSub) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.subs[sub] = struct{}{}
	return true
}

func (s *session) removeSub(sub *clientSub) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.subs, sub) // no-op on a nil map
}

// watch ends the subscription when ctx ends.
func (sub *clientSub) watch(ctx context.Context) {
	unhook := context.AfterFunc(ctx, func() { sub.end(true) })
	sub.mu.Lock()
	ended := sub.ended
	if !ended {
		sub.unhook = unhook
	}
	sub.mu.Unlock()
	if ended {
		unhook()
	}
}

// deliver queues ev for the consumer without blocking. It reports false when the buffer
// is full; the caller then ends the subscription.
func (sub *clientSub) deliver(ev broker.Event) bool {
	sub.mu.Lock()
	defer sub.mu.Unlock()
	if sub.ended {
		return true
	}
	select {
	case sub.ch <- ev:
		return true
	default:
		return false
	}
}

// end closes the channel and forgets the subscription, the first time only. tellServer
// sends an unsubscribe frame, for ends the server does not know about.
func (sub *clientSub) end(tellServer bool) {
	sub.mu.Lock()
	if sub.ended {
		sub.mu.Unlock()
		return
	}
	sub.ended = true
	close(sub.ch)
	unhook := sub.unhook
	sub.mu.Unlock()
	if unhook != nil {
		unhook()
	}
	sub.cc.removeSub(sub.id)
	sub.sess.removeSub(sub)
	if tellServer {
		sub.cc.sendOneWay(&outFrame{Type: frameUnsubscribe, Sub: sub.id})
	}
}
