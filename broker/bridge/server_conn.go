package bridge

import (
	"bufio"
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/internal/stackgrow"
)

// serverConn is one client connection on the server: a reader (the run goroutine), a
// writer, a goroutine per in-flight request and one per subscription.
type serverConn struct {
	srv *Server
	nc  net.Conn
	log zerolog.Logger
	// source is the remote's netsource; handshakeTimeout its deadline for the hello.
	source           string
	handshakeTimeout time.Duration

	ctx    context.Context // ends when the connection ends
	cancel context.CancelFunc
	wg     sync.WaitGroup // writer, request handlers, subscription forwarders

	out    *outQueue   // responses and pongs
	events chan []byte // encoded event and sub_end frames

	mu       sync.Mutex
	requests map[uint64]context.CancelFunc // in flight, by request id
	sessions map[uint64]*serverSession
	subs     map[uint64]*serverSub
}

// serverSession is a session a client opened on this connection. sess is nil while the
// wrapped broker is still connecting it; closed marks one the client closed meanwhile.
type serverSession struct {
	sess   broker.Session
	subs   map[uint64]*serverSub
	closed bool
}

func newServerConn(s *Server, nc net.Conn) *serverConn {
	ctx, cancel := context.WithCancel(s.ctx)
	return &serverConn{
		srv: s, nc: nc,
		log:      s.log.With().Str("remote", nc.RemoteAddr().String()).Logger(),
		ctx:      ctx,
		cancel:   cancel,
		out:      newOutQueue(),
		events:   make(chan []byte, s.opts.EventQueue),
		requests: make(map[uint64]context.CancelFunc),
		sessions: make(map[uint64]*serverSession),
		subs:     make(map[uint64]*serverSub),
	}
}

// abort ends the connection; run notices and cleans up. The socket closes before the
// requests are cancelled, so no answer of a cancelled request can still go out.
func (c *serverConn) abort() {
	_ = c.nc.Close()
	c.cancel()
}

// run serves the connection until it ends, then releases everything it holds.
func (c *serverConn) run() {
	fr := newFrameReader(c.nc)
	fr.limit = MaxHelloSize // until the client has authenticated
	name, err := c.handshake(fr)
	c.srv.handshakeDone(c.source)
	if err != nil {
		c.srv.refusedLog(c.nc.RemoteAddr().String(), "handshake failed", err)
		c.abort()
		return
	}
	fr.limit = MaxFrameSize
	fr.budget = c.srv.frames
	c.log = c.log.With().Str("client", name).Logger()
	c.log.Info().Msg("client connected")
	c.wg.Add(1)
	go c.writeLoop()
	err = c.readLoop(fr)
	c.abort()
	c.wg.Wait()
	c.closeSessions()
	if c.srv.ctx.Err() != nil || errors.Is(err, io.EOF) {
		c.log.Info().Msg("client disconnected")
	} else {
		c.log.Warn().Err(err).Msg("connection lost")
	}
}

// handshake reads the hello frame, checks version and token and answers welcome or
// refused. It returns the client's name.
func (c *serverConn) handshake(fr *frameReader) (string, error) {
	opts := c.srv.opts
	_ = c.nc.SetReadDeadline(time.Now().Add(c.handshakeTimeout))
	f, err := fr.next()
	if err != nil {
		return "", fmt.Errorf("read hello: %w", err)
	}
	var refuse *broker.TradeError
	switch {
	case f.Type != frameHello:
		refuse = broker.NewError(broker.ErrPermanent, broker.CodeInvalidRequest,
			"bridge: expected a hello frame, got %q", f.Type)
	case f.Version != ProtocolVersion:
		refuse = broker.NewError(broker.ErrPermanent, broker.CodeInvalidRequest,
			"bridge: protocol version %d is not supported (server speaks %d)", f.Version, ProtocolVersion)
	case opts.Token != "" && subtle.ConstantTimeCompare([]byte(f.Token), []byte(opts.Token)) != 1:
		refuse = broker.NewError(broker.ErrPermanent, broker.CodeAuthFailed, "bridge: bad token")
	}
	if refuse != nil && refuse.Code == broker.CodeAuthFailed {
		// Guessing is not free: each bad token from a source delays its refusal longer
		// (the slot stays taken meanwhile, and a source has few); the right token is
		// never delayed, so clients sharing the address are not locked out.
		if d := c.srv.guesses.failed(c.source, time.Now()); d > 0 {
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-c.ctx.Done():
				t.Stop()
			}
		}
	}
	_ = c.nc.SetWriteDeadline(time.Now().Add(opts.WriteTimeout))
	if refuse != nil {
		if b, err := encodeFrame(&outFrame{Type: frameRefused, Error: toWireError("", refuse)}); err == nil {
			_, _ = c.nc.Write(b)
		}
		return "", refuse
	}
	b, err := encodeFrame(&outFrame{Type: frameWelcome, Version: ProtocolVersion,
		MaxInflight: opts.MaxInflight, IdleTimeout: opts.IdleTimeout.Milliseconds()})
	if err != nil {
		return "", err
	}
	if _, err := c.nc.Write(b); err != nil {
		return "", fmt.Errorf("write welcome: %w", err)
	}
	return f.Name, nil
}

// readLoop reads frames until the connection fails or ends. It never waits for a handler.
func (c *serverConn) readLoop(fr *frameReader) error {
	idle := c.srv.opts.IdleTimeout
	// A client that keeps sending without reading what it is sent (refused requests,
	// pongs) would grow the response queue without end: it is cut off instead.
	maxQueued := 4*c.srv.opts.MaxInflight + 1024
	for {
		_ = c.nc.SetReadDeadline(time.Now().Add(idle))
		f, err := fr.next()
		if err != nil {
			return err
		}
		if c.out.len() > maxQueued {
			return fmt.Errorf("bridge: more than %d frames wait for the client to read them", maxQueued)
		}
		switch f.Type {
		case frameRequest:
			if err := c.dispatch(f); err != nil {
				return err
			}
		case frameCancel:
			c.mu.Lock()
			cancel := c.requests[f.ID]
			c.mu.Unlock()
			if cancel != nil {
				cancel()
			}
		case frameUnsubscribe:
			c.unsubscribe(f.Sub)
		case framePing:
			c.enqueue(&outFrame{Type: framePong, ID: f.ID})
		default:
			// Unknown frame types are ignored so that newer clients can add optional ones.
			c.log.Debug().Str("type", f.Type).Msg("ignoring unknown frame")
		}
	}
}

// dispatch starts a request on its own goroutine, or answers it at once when the
// connection already has MaxInflight requests in flight or the id is in use.
func (c *serverConn) dispatch(f *inFrame) error {
	if f.ID == 0 {
		return errors.New("bridge: request without an id")
	}
	if what := f.badID(); what != "" {
		// The client cannot have meant it (PROTOCOL.md: ids are below 2^53); answering
		// under an id it may not read back exactly would be worse than refusing.
		c.respond(f, nil, broker.NewError(broker.ErrPermanent, broker.CodeInvalidRequest,
			"bridge: %s above 2^53 − 1 (ids must be read exactly by every JSON implementation)", what))
		return nil
	}
	timeout := c.srv.opts.DefaultRequestTimeout
	if f.Timeout > 0 {
		timeout = time.Duration(f.Timeout) * time.Millisecond
	}
	c.mu.Lock()
	var reject error
	switch {
	case len(c.requests) >= c.srv.opts.MaxInflight:
		reject = broker.NewError(broker.ErrRetryable, broker.CodeTooManyRequests,
			"bridge: more than %d requests in flight on one connection", c.srv.opts.MaxInflight)
	case c.requests[f.ID] != nil:
		reject = broker.NewError(broker.ErrPermanent, broker.CodeInvalidRequest,
			"bridge: request id %d is already in flight", f.ID)
	}
	if reject != nil {
		c.mu.Unlock()
		c.respond(f, nil, reject)
		return nil
	}
	ctx, cancel := context.WithTimeout(c.ctx, timeout)
	c.requests[f.ID] = cancel
	c.wg.Add(1)
	c.mu.Unlock()
	go func() {
		// The handler decodes its params and calls the session: a deep call that would
		// grow the new goroutine's stack by doubling three or four times.
		stackgrow.Grow()
		defer c.wg.Done()
		result, err := c.handle(ctx, f)
		cancel()
		// Leave the in-flight set before answering: once the client has the answer it
		// may send another request, which must find the slot free.
		c.mu.Lock()
		delete(c.requests, f.ID)
		c.mu.Unlock()
		c.respond(f, result, err)
	}()
	return nil
}

// respond queues the response to request f.
func (c *serverConn) respond(f *inFrame, result any, err error) {
	out := &outFrame{Type: frameResponse, ID: f.ID}
	if err != nil {
		out.Error = toWireError(f.Method, err)
		c.log.Debug().Str("method", f.Method).Uint64("session", f.Session).Err(err).Msg("request failed")
	} else {
		out.Result = result
	}
	b, encErr := encodeFrame(out)
	if encErr != nil {
		c.log.Error().Err(encErr).Str("method", f.Method).Msg("cannot encode response")
		b, encErr = encodeFrame(&outFrame{Type: frameResponse, ID: f.ID, Error: toWireError(f.Method,
			broker.NewError(broker.ErrPermanent, broker.CodeInvalidRequest, "bridge: cannot encode the response: %v", encErr))})
		if encErr != nil {
			return // cannot happen: the error frame is small and plain
		}
	}
	c.out.push(queued{data: b})
}

// enqueue encodes and queues a control frame.
func (c *serverConn) enqueue(f *outFrame) {
	b, err := encodeFrame(f)
	if err != nil {
		c.log.Error().Err(err).Str("type", f.Type).Msg("cannot encode frame")
		return
	}
	c.out.push(queued{data: b})
}

// writeLoop writes queued frames, responses first, then up to a batch of events, and
// flushes once per pass. A write that fails or times out ends the connection.
func (c *serverConn) writeLoop() {
	defer c.wg.Done()
	const eventBatch = 64
	bw := bufio.NewWriterSize(c.nc, 32<<10)
	var batch []queued
	var first []byte
	for {
		select {
		case <-c.out.ready:
		case first = <-c.events:
		case <-c.ctx.Done():
			return
		}
		_ = c.nc.SetWriteDeadline(time.Now().Add(c.srv.opts.WriteTimeout))
		batch = c.out.take(batch)
		for _, q := range batch {
			_, _ = bw.Write(q.data)
		}
		if first != nil {
			_, _ = bw.Write(first)
			first = nil
		}
	events:
		for range eventBatch {
			select {
			case b := <-c.events:
				_, _ = bw.Write(b)
			default:
				break events
			}
		}
		if err := bw.Flush(); err != nil {
			c.log.Debug().Err(err).Msg("write failed")
			c.abort()
			return
		}
	}
}

// closeSessions closes every session left open; it runs once the connection's
// goroutines are gone.
func (c *serverConn) closeSessions() {
	c.mu.Lock()
	sessions := c.sessions
	c.sessions = make(map[uint64]*serverSession)
	c.mu.Unlock()
	for id, ss := range sessions {
		if ss.sess == nil {
			continue
		}
		if err := ss.sess.Close(); err != nil {
			c.log.Debug().Err(err).Uint64("session", id).Msg("closing session")
		}
	}
}
