package bridge

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/internal/netsource"
	"github.com/snapcopier/copier/internal/ratelog"
)

// ErrServerClosed is returned by Serve and ListenAndServe once Close has been called.
var ErrServerClosed = errors.New("bridge: server closed")

// Server exposes a broker.Broker, and optionally a broker.Controller, to bridge clients.
// Every connection multiplexes any number of sessions; its requests run concurrently, up
// to ServerOptions.MaxInflight at once. A connection's sessions and subscriptions end with
// it. A Server is safe for concurrent use.
type Server struct {
	b    broker.Broker
	ctl  broker.Controller
	opts ServerOptions
	log  zerolog.Logger

	ctx    context.Context // ends on Close; parent of every connection's context
	cancel context.CancelFunc

	frames *byteBudget // ServerOptions.FrameBudget, shared by the signed-in connections

	mu        sync.Mutex
	closed    bool
	listeners []net.Listener
	conns     map[*serverConn]struct{}
	pending   int            // connections still in their handshake
	pendingBy map[string]int // the same by source (netsource)
	guesses   guessLog       // bad tokens by source: their refusals are delayed
	refusals  ratelog.Limiter
	wg        sync.WaitGroup // one per connection
}

func (s *Server) now() time.Time { return s.opts.Clock() }

// NewServer returns a server that exposes b and, when ctl is not nil, ctl. Without a
// controller, control requests are answered with a permanent error.
func NewServer(b broker.Broker, ctl broker.Controller, opts ServerOptions) *Server {
	ctx, cancel := context.WithCancel(context.Background())
	opts = opts.withDefaults()
	return &Server{
		b: b, ctl: ctl, opts: opts,
		log:       opts.Logger.With().Str("component", "bridge-server").Logger(),
		ctx:       ctx,
		cancel:    cancel,
		conns:     make(map[*serverConn]struct{}),
		frames:    &byteBudget{left: opts.FrameBudget},
		pendingBy: make(map[string]int),
	}
}

// ListenAndServe listens on the TCP address addr and serves it until Close.
func (s *Server) ListenAndServe(addr string) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("bridge: listen %s: %w", addr, err)
	}
	return s.Serve(l)
}

// Serve accepts connections on l until Close, and then returns ErrServerClosed. It closes
// l when it returns. Serve may run on several listeners at once.
func (s *Server) Serve(l net.Listener) error {
	if !s.addListener(l) {
		_ = l.Close()
		return ErrServerClosed
	}
	defer s.removeListener(l)
	if s.opts.Token == "" {
		s.log.Warn().Str("addr", l.Addr().String()).Msg("serving without a token: any client is accepted")
	}
	s.log.Info().Str("addr", l.Addr().String()).Msg("serving")
	var delay time.Duration
	for {
		nc, err := l.Accept()
		if err != nil {
			if s.isClosed() {
				return ErrServerClosed
			}
			if errors.Is(err, net.ErrClosed) {
				return fmt.Errorf("bridge: accept: %w", err)
			}
			// Out of file descriptors and the like: wait and try again.
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			s.log.Warn().Err(err).Dur("retry_in", delay).Msg("accept failed")
			select {
			case <-time.After(delay):
			case <-s.ctx.Done():
				return ErrServerClosed
			}
			continue
		}
		delay = 0
		s.startConn(nc)
	}
}

// Addr returns the address of the first listener Serve is running on, or nil when it is
// serving none.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.listeners) == 0 {
		return nil
	}
	return s.listeners[0].Addr()
}

// Close stops the listeners, closes every connection (and with them every session and
// subscription they carry, after cancelling their requests) and waits for all the
// server's goroutines. It is idempotent.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		s.wg.Wait()
		return nil
	}
	s.closed = true
	s.cancel()
	var errs []error
	for _, l := range s.listeners {
		if err := l.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			errs = append(errs, err)
		}
	}
	for c := range s.conns {
		c.abort()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return errors.Join(errs...)
}

func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

func (s *Server) addListener(l net.Listener) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.listeners = append(s.listeners, l)
	return true
}

func (s *Server) removeListener(l net.Listener) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, x := range s.listeners {
		if x == l {
			s.listeners = append(s.listeners[:i], s.listeners[i+1:]...)
			break
		}
	}
	_ = l.Close()
}

// handshakeDone is called once per connection when its handshake has ended.
func (s *Server) handshakeDone(source string) {
	s.mu.Lock()
	s.pending--
	if s.pendingBy[source]--; s.pendingBy[source] <= 0 {
		delete(s.pendingBy, source)
	}
	s.mu.Unlock()
}

// refusedLog logs a refused connection or handshake, at most one line a second (with the
// count of lines held back): a flood of them once wrote one line each.
func (s *Server) refusedLog(remote, msg string, err error) {
	ok, held := s.refusals.Allow(time.Now())
	if !ok {
		return
	}
	s.log.Warn().Str("remote", remote).Err(err).Int("refusals_not_logged", held).Msg(msg)
}

// startConn registers nc and serves it on its own goroutine.
func (s *Server) startConn(nc net.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		_ = nc.Close()
		return
	}
	// Caps: a stranger may open connections without end; each costs a descriptor and a
	// reader buffer. Over a cap the connection is closed at once, before reading a byte.
	source := netsource.Of(nc.RemoteAddr())
	if len(s.conns) >= s.opts.MaxConns || s.pending >= s.opts.MaxPendingHandshakes || s.pendingBy[source] >= s.opts.MaxPendingPerSource {
		s.refusedLog(nc.RemoteAddr().String(), "connection refused: too many connections", fmt.Errorf(
			"%d connections, %d handshaking, %d of them from %s", len(s.conns), s.pending, s.pendingBy[source], source))
		_ = nc.Close()
		return
	}
	// Under pressure (half the handshake slots taken) a newcomer gets a short deadline:
	// idle sockets re-opened in a loop cannot hold the slots for a whole HandshakeTimeout.
	deadline := s.opts.HandshakeTimeout
	if 2*s.pending >= s.opts.MaxPendingHandshakes {
		deadline = min(deadline, s.opts.PressureHandshakeTimeout)
	}
	c := newServerConn(s, nc)
	c.source, c.handshakeTimeout = source, deadline
	s.conns[c] = struct{}{}
	s.pending++
	s.pendingBy[source]++
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		c.run()
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
	}()
}
