package bridge

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
)

// clientConn is one live connection of a Client: a reader and a writer goroutine, the
// calls waiting for answers and the subscriptions fed from it. It is never reused: after
// a drop the Client dials a new one.
type clientConn struct {
	nc        net.Conn
	log       zerolog.Logger
	out       *outQueue
	slots     chan struct{} // one per request in flight, up to the server's limit
	pingEvery time.Duration
	born      time.Time
	lastRead  atomic.Int64 // time.Since(born) of the last frame read, in nanoseconds
	nextID    atomic.Uint64
	done      chan struct{} // closed when the connection ends
	onEnd     func(*clientConn)

	mu      sync.Mutex
	pending map[uint64]*call      // nil once the connection ended
	subs    map[uint64]*clientSub // nil once the connection ended
	err     error                 // why it ended
	once    sync.Once
}

func newClientConn(nc net.Conn, log zerolog.Logger, maxInflight int, pingEvery time.Duration) *clientConn {
	return &clientConn{
		nc: nc, log: log,
		out:       newOutQueue(),
		slots:     make(chan struct{}, maxInflight),
		pingEvery: pingEvery,
		born:      time.Now(),
		done:      make(chan struct{}),
		pending:   make(map[uint64]*call),
		subs:      make(map[uint64]*clientSub),
	}
}

// cause returns why the connection ended, or nil while it is up.
func (cc *clientConn) cause() error {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return cc.err
}

// end closes the connection once: waiting calls get err, subscriptions close, and onEnd
// runs.
func (cc *clientConn) end(err error) {
	cc.once.Do(func() {
		cc.mu.Lock()
		cc.err = err
		pending, subs := cc.pending, cc.subs
		cc.pending, cc.subs = nil, nil
		cc.mu.Unlock()
		_ = cc.nc.Close()
		close(cc.done)
		for _, cl := range pending {
			cl.done <- callResult{err: err}
		}
		for _, sub := range subs {
			sub.end(false)
		}
		if cc.onEnd != nil {
			cc.onEnd(cc)
		}
	})
}

// sendOneWay queues a frame that has no answer (cancel, unsubscribe, ping).
func (cc *clientConn) sendOneWay(f *outFrame) {
	select {
	case <-cc.done:
		return
	default:
	}
	b, err := encodeFrame(f)
	if err != nil {
		cc.log.Error().Err(err).Str("type", f.Type).Msg("cannot encode frame")
		return
	}
	cc.out.push(queued{data: b})
}

// readLoop dispatches frames until the connection fails. It never blocks on a consumer:
// answers go to buffered channels and events to the subscriptions' buffers.
func (cc *clientConn) readLoop(fr *frameReader) {
	for {
		f, err := fr.next()
		if err != nil {
			cc.end(fmt.Errorf("bridge: read: %w", err))
			return
		}
		cc.lastRead.Store(int64(time.Since(cc.born)))
		switch f.Type {
		case frameResponse:
			cc.mu.Lock()
			cl := cc.pending[f.ID]
			delete(cc.pending, f.ID)
			cc.mu.Unlock()
			if cl != nil {
				<-cc.slots
				cl.done <- callResult{f: f}
			}
		case frameEvent:
			cc.deliver(f)
		case frameSubEnd:
			if sub := cc.sub(f.Sub); sub != nil {
				cc.log.Debug().Uint64("sub", f.Sub).Str("reason", f.Reason).Msg("subscription ended by the server")
				sub.end(false)
			}
		case framePong:
		default:
			cc.log.Debug().Str("type", f.Type).Msg("ignoring unknown frame")
		}
	}
}

// deliver hands an event to its subscription.
func (cc *clientConn) deliver(f *inFrame) {
	sub := cc.sub(f.Sub)
	if sub == nil {
		return // ended on this side already
	}
	var w wireEvent
	if err := json.Unmarshal(f.Event, &w); err != nil {
		cc.log.Error().Err(err).Uint64("sub", f.Sub).Msg("malformed event; ending the subscription")
		sub.end(true)
		return
	}
	if !sub.deliver(w.toBroker()) {
		cc.log.Warn().Uint64("sub", f.Sub).Int("buffer", cap(sub.ch)).
			Msg("subscriber too slow: buffer full, subscription closed")
		sub.end(true)
	}
}

func (cc *clientConn) sub(id uint64) *clientSub {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return cc.subs[id]
}

// addSub registers a subscription before it is requested, so no early event is lost.
func (cc *clientConn) addSub(sub *clientSub) bool {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.subs == nil {
		return false
	}
	cc.subs[sub.id] = sub
	return true
}

func (cc *clientConn) removeSub(id uint64) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	delete(cc.subs, id) // no-op on a nil map
}

// writeLoop writes queued frames, one flush per batch, and pings the server every
// pingEvery. When nothing was read for three intervals the connection is declared dead.
func (cc *clientConn) writeLoop() {
	bw := bufio.NewWriterSize(cc.nc, 32<<10)
	ticker := time.NewTicker(cc.pingEvery)
	defer ticker.Stop()
	ping, err := encodeFrame(&outFrame{Type: framePing})
	if err != nil {
		cc.end(err)
		return
	}
	var batch []queued
	for {
		pinging := false
		select {
		case <-cc.out.ready:
		case <-ticker.C:
			silent := time.Since(cc.born) - time.Duration(cc.lastRead.Load())
			if silent > 3*cc.pingEvery {
				cc.end(fmt.Errorf("bridge: nothing received for %v", silent.Round(time.Millisecond)))
				return
			}
			pinging = true
		case <-cc.done:
			return
		}
		_ = cc.nc.SetWriteDeadline(time.Now().Add(3 * cc.pingEvery))
		batch = cc.out.take(batch)
		for _, q := range batch {
			if q.call != nil && !q.call.state.CompareAndSwap(callQueued, callWritten) {
				continue // its caller gave up before it left
			}
			if q.call != nil && q.call.trace != nil {
				q.call.trace.MarkWritten(time.Now())
			}
			_, _ = bw.Write(q.data)
		}
		if pinging {
			_, _ = bw.Write(ping)
		}
		if err := bw.Flush(); err != nil {
			if !errors.Is(err, net.ErrClosed) {
				err = fmt.Errorf("bridge: write: %w", err)
			}
			cc.end(err)
			return
		}
	}
}
