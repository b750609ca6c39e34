package bridge

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/snapcopier/copier/broker"
)

// errClientClosed ends the connection of a closed Client.
var errClientClosed = errors.New("bridge: client closed")

// Client is a connection to a bridge Server. It implements broker.Broker and
// broker.Controller. All sessions share one TCP connection; after a drop the Client
// reconnects in the background with jittered exponential backoff, and each session is
// reopened on the new connection the next time it is used. To do that a session keeps
// its credentials, password included, in memory until it is closed.
//
// A Client is safe for concurrent use. Close it to stop reconnecting and free its
// goroutines.
type Client struct {
	addr string
	opts ClientOptions
	log  zerolog.Logger

	ctx    context.Context // ends on Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // the reconnect loop and every connection's goroutines
	ids    atomic.Uint64  // session and subscription ids, unique for the client's life

	mu     sync.Mutex
	conn   *clientConn // nil while disconnected
	closed bool
}

var (
	_ broker.Broker     = (*Client)(nil)
	_ broker.Controller = (*Client)(nil)
)

// Dial connects to the bridge server at addr (host:port) and completes the handshake.
// It fails when the server cannot be reached (broker.ErrDisconnected) or refuses the
// client (broker.ErrPermanent with code broker.CodeAuthFailed for a bad token); it does
// not retry. Once Dial has succeeded, the Client reconnects by itself.
func Dial(ctx context.Context, addr string, opts ClientOptions) (*Client, error) {
	opts = opts.withDefaults()
	cctx, cancel := context.WithCancel(context.Background())
	c := &Client{
		addr: addr, opts: opts,
		log:    opts.Logger.With().Str("component", "bridge-client").Str("addr", addr).Logger(),
		ctx:    cctx,
		cancel: cancel,
	}
	cc, err := c.dial(ctx)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("bridge: dial %s: %w", addr, err)
	}
	c.install(cc)
	c.wg.Add(1)
	go c.reconnectLoop(cc)
	return c, nil
}

// Connected returns nil while the Client holds a connection to the server, else why not
// (for readiness probes: a node whose bridge is down cannot trade).
func (c *Client) Connected() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.closed:
		return errors.New("bridge: client closed")
	case c.conn == nil:
		return fmt.Errorf("bridge: disconnected from %s (reconnecting)", c.addr)
	}
	return nil
}

// Close closes the connection and stops reconnecting. Every session and subscription
// ends; calls in flight fail as they would on a drop. Close is idempotent.
func (c *Client) Close() error {
	c.mu.Lock()
	c.closed = true
	cc := c.conn
	c.conn = nil
	c.mu.Unlock()
	c.cancel()
	if cc != nil {
		cc.end(errClientClosed)
	}
	c.wg.Wait()
	return nil
}

// Connect opens a session for one account on the server's broker.
func (c *Client) Connect(ctx context.Context, creds broker.Credentials) (broker.Session, error) {
	s := newSession(c, creds)
	ctx, cancel := c.bound(ctx)
	defer cancel()
	if _, _, err := s.attach(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// bound gives ctx the client's RequestTimeout when it has no deadline.
func (c *Client) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, c.opts.RequestTimeout)
}

// current returns the live connection, or an ErrDisconnected error.
func (c *Client) current() (*clientConn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.closed:
		return nil, classified(broker.ErrDisconnected, broker.CodeNoConnection, "bridge: not connected", errClientClosed)
	case c.conn == nil:
		return nil, broker.NewError(broker.ErrDisconnected, broker.CodeNoConnection, "bridge: not connected (reconnecting)")
	}
	return c.conn, nil
}

// call sends a request that belongs to no session (a control request).
func (c *Client) call(ctx context.Context, method string, params, result any) error {
	cc, err := c.current()
	if err != nil {
		return err
	}
	return cc.do(ctx, method, 0, params, result)
}

// dial opens a connection and completes the handshake within DialTimeout.
func (c *Client) dial(ctx context.Context) (*clientConn, error) {
	ctx, cancel := context.WithTimeout(ctx, c.opts.DialTimeout)
	defer cancel()
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", c.addr)
	if err != nil {
		return nil, classified(broker.ErrDisconnected, broker.CodeNoConnection, "bridge: cannot reach the server", err)
	}
	fr := newFrameReader(nc)
	welcome, err := handshake(ctx, nc, fr, c.opts)
	if err != nil {
		_ = nc.Close()
		return nil, err
	}
	ping := c.opts.PingInterval
	if idle := time.Duration(welcome.IdleTimeout) * time.Millisecond; idle > 0 {
		ping = min(ping, idle/3)
	}
	cc := newClientConn(nc, c.log, max(1, welcome.MaxInflight), max(ping, time.Millisecond))
	cc.onEnd = c.connEnded
	c.wg.Add(2)
	go func() { defer c.wg.Done(); cc.readLoop(fr) }()
	go func() { defer c.wg.Done(); cc.writeLoop() }()
	return cc, nil
}

// handshake sends hello and reads the server's welcome or refusal.
func handshake(ctx context.Context, nc net.Conn, fr *frameReader, opts ClientOptions) (*inFrame, error) {
	if dl, ok := ctx.Deadline(); ok {
		_ = nc.SetDeadline(dl)
		defer func() { _ = nc.SetDeadline(time.Time{}) }()
	}
	stop := context.AfterFunc(ctx, func() { _ = nc.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	hello, err := encodeFrame(&outFrame{Type: frameHello, Version: ProtocolVersion, Token: opts.Token, Name: opts.Name})
	if err != nil {
		return nil, err
	}
	if _, err := nc.Write(hello); err != nil {
		return nil, classified(broker.ErrDisconnected, broker.CodeNoConnection, "bridge: handshake", err)
	}
	f, err := fr.next()
	if err != nil {
		return nil, classified(broker.ErrDisconnected, broker.CodeNoConnection, "bridge: handshake", err)
	}
	switch {
	case f.Type == frameRefused && f.Error != nil:
		return nil, f.Error.toError("")
	case f.Type != frameWelcome:
		return nil, broker.NewError(broker.ErrPermanent, broker.CodeInvalidRequest, "bridge: handshake: unexpected %q frame", f.Type)
	case f.Version != ProtocolVersion:
		return nil, broker.NewError(broker.ErrPermanent, broker.CodeInvalidRequest,
			"bridge: handshake: server speaks protocol version %d, not %d", f.Version, ProtocolVersion)
	}
	return f, nil
}

// connEnded forgets a connection that ended; the reconnect loop notices through its done
// channel.
func (c *Client) connEnded(cc *clientConn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn == cc {
		c.conn = nil
	}
}

// reconnectLoop waits for the connection to end and dials again with jittered
// exponential backoff, until Close.
func (c *Client) reconnectLoop(cc *clientConn) {
	defer c.wg.Done()
	bo := reconnects{min: c.opts.ReconnectMin, max: c.opts.ReconnectMax}
	for {
		select {
		case <-cc.done:
		case <-c.ctx.Done():
			return
		}
		c.log.Warn().Err(cc.cause()).Msg("connection lost; reconnecting")
		for attempt := 1; ; attempt++ {
			wait := bo.next()
			select {
			case <-time.After(wait):
			case <-c.ctx.Done():
				return
			}
			next, err := c.dial(c.ctx)
			if err == nil {
				if !c.install(next) {
					return
				}
				c.log.Info().Int("attempt", attempt).Msg("reconnected")
				bo.reset()
				cc = next
				break
			}
			lvl := zerolog.WarnLevel
			if errors.Is(err, broker.ErrPermanent) {
				lvl = zerolog.ErrorLevel // refused (bad token, version): keep trying, loudly
			}
			c.log.WithLevel(lvl).Err(err).Int("attempt", attempt).Dur("waited", wait).Msg("reconnect failed")
		}
	}
}

// install makes cc the live connection unless the client was closed meanwhile.
func (c *Client) install(cc *clientConn) bool {
	c.mu.Lock()
	closed := c.closed
	select {
	case <-cc.done: // already gone: the loop dials again
	default:
		if !closed {
			c.conn = cc
		}
	}
	c.mu.Unlock()
	if closed {
		cc.end(errClientClosed)
	}
	return !closed
}
