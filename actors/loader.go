package actors

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/store"
)

// loadRequest asks the Loader for one follower's configuration (and its ticket map when
// tickets), and a session when connect (left in inbox); the answer (loaded) goes to
// replyTo.
type loadRequest struct {
	req     store.LoadRequest
	connect bool
	inbox   *sessionInbox
	replyTo *actor.PID
}

// sessionInbox hands a connected session from the Loader to one AccountActor. The
// message that announces it may never be handled (the actor stopped meanwhile: a message
// to a stopped actor is dropped), so the session waits here, and the actor closes the
// inbox as it stops, with any session it did not take: none stays open until the process
// ends.
type sessionInbox struct {
	mu     sync.Mutex
	s      broker.Session
	closed bool
}

// put leaves s for the actor, or closes it when the actor has stopped.
func (b *sessionInbox) put(s broker.Session) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		_ = s.Close()
		return
	}
	if b.s != nil {
		_ = b.s.Close() // an older one not taken: replaced
	}
	b.s = s
}

// take returns the session left for the actor, if any.
func (b *sessionInbox) take() broker.Session {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.s
	b.s = nil
	return s
}

// close closes the session not taken and every later one.
func (b *sessionInbox) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.s != nil {
		_ = b.s.Close()
		b.s = nil
	}
	b.closed = true
}

type loadBatchDone struct{}

// maxLoadBatch bounds one batch: its queries carry this many ids.
const maxLoadBatch = 2000

// loader is the actor that reads followers' configurations in batches: every request
// that arrives while a batch runs joins the next one, so a takeover of thousands of
// accounts costs a few transactions instead of three per account. At most maxBatches run
// at once, so the lease cycle and the StatusWriter always find a pooled connection.
// Sessions are connected afterwards, at most connects at a time.
type loader struct {
	e          *engine
	queue      []loadRequest
	running    int
	maxBatches int
	connects   chan struct{}
}

func newLoader(e *engine, maxBatches, connects int) actor.Producer {
	return func() actor.Actor {
		return &loader{e: e, maxBatches: max(1, maxBatches), connects: make(chan struct{}, max(1, connects))}
	}
}

// Receive implements actor.Actor.
func (l *loader) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case loadRequest:
		l.queue = append(l.queue, m)
		l.pump(ctx)
	case loadBatchDone:
		l.running--
		l.pump(ctx)
	}
}

func (l *loader) pump(ctx actor.Context) {
	for l.running < l.maxBatches && len(l.queue) > 0 {
		n := min(len(l.queue), maxLoadBatch)
		batch := l.queue[:n:n]
		l.queue = l.queue[n:]
		if len(l.queue) == 0 {
			l.queue = nil // let the backing array go
		}
		l.running++
		self, root := ctx.Self(), ctx.ActorSystem().Root
		go func() {
			l.run(root, batch)
			root.Send(self, loadBatchDone{})
		}()
	}
}

// run loads one batch and answers each request, after connecting its session if asked.
func (l *loader) run(root *actor.RootContext, batch []loadRequest) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	reqs := make([]store.LoadRequest, len(batch))
	for i, b := range batch {
		reqs[i] = b.req
	}
	loads, err := store.LoadFollowers(ctx, l.e.pool, reqs)
	for i, b := range batch {
		var m loaded
		if err != nil {
			m.err = err
		} else {
			f := loads[i]
			m = loaded{cfg: f.Config, prot: f.Protection, tickets: f.Tickets, withTickets: f.WithTickets, err: f.Err}
		}
		if m.err != nil || !b.connect {
			root.Send(b.replyTo, m)
			continue
		}
		go func() {
			cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			select {
			case l.connects <- struct{}{}:
				var s broker.Session
				if s, m.err = l.e.connect(cctx, m.cfg.Account); m.err == nil {
					b.inbox.put(s)
				}
				<-l.connects
			case <-cctx.Done():
				m.err = fmt.Errorf("waiting to connect: %w", cctx.Err())
			}
			root.Send(b.replyTo, m)
		}()
	}
}
