package main

import (
	"context"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/snapcopier/copier/internal/connauth"
)

// limitListener holds at most its capacity of connections. When all are taken, a new
// connection displaces the oldest one that has no request in progress (one still
// sending its headers, or an idle keep-alive one), else the oldest anonymous one with a
// request in progress (a slow body, say); only when every connection is an operator's
// with a request in progress does the newcomer wait for a free slot. So slow-header
// (slowloris), slow-body or idle connections cannot keep a probe or a scrape out: they
// once held all 256 slots and /healthz waited 10–17 s.
//
// A connection is anonymous until a request on it authenticates (the console marks it,
// internal/connauth). An anonymous connection must deliver its request's headers within
// anonHeader of being accepted, not the server's ReadHeaderTimeout, and is closed once
// its request is answered (it would otherwise start a second header wait on a keep-alive
// connection, which a listener cannot time). So slow-header clients hold a slot, a
// descriptor and a goroutine for at most anonHeader, while an operator's connection keeps
// the ordinary limits and its keep-alive.
type limitListener struct {
	net.Listener
	slots      chan struct{}
	done       chan struct{}
	closeOnce  sync.Once
	anonHeader time.Duration // 0: no timeout of its own

	mu      sync.Mutex
	waiting map[*limitConn]time.Time // no request in progress, since when
	busy    map[*limitConn]time.Time // a request in progress, since when
}

func newLimitListener(l net.Listener, n int, anonHeader time.Duration) *limitListener {
	return &limitListener{Listener: l, slots: make(chan struct{}, n), done: make(chan struct{}),
		anonHeader: anonHeader, waiting: map[*limitConn]time.Time{}, busy: map[*limitConn]time.Time{}}
}

// Accept accepts, then takes a slot: a free one, else one freed by displacing the oldest
// connection without a request in progress, else the next one freed.
func (l *limitListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	select {
	case l.slots <- struct{}{}:
	default:
		l.displaceOldest()
		select {
		case l.slots <- struct{}{}:
		case <-l.done:
			_ = c.Close()
			return nil, net.ErrClosed
		}
	}
	return &limitConn{Conn: c, release: func() { <-l.slots }}, nil
}

// displaceOldest closes the connection that has waited longest without a request, else
// the anonymous one whose request has been in progress longest.
func (l *limitListener) displaceOldest() {
	l.mu.Lock()
	oldest := oldestOf(l.waiting, func(*limitConn) bool { return true })
	if oldest == nil {
		oldest = oldestOf(l.busy, func(c *limitConn) bool { return !c.mark.Authenticated() })
	}
	delete(l.waiting, oldest)
	delete(l.busy, oldest)
	l.mu.Unlock()
	if oldest != nil {
		_ = oldest.Close()
	}
}

// oldestOf returns the connection of m with the earliest time among those that may go.
func oldestOf(m map[*limitConn]time.Time, may func(*limitConn) bool) *limitConn {
	var oldest *limitConn
	var since time.Time
	for c, t := range m {
		if (oldest == nil || t.Before(since)) && may(c) {
			oldest, since = c, t
		}
	}
	return oldest
}

// connState is the server's http.Server.ConnState: it tracks which connections have no
// request in progress, times an anonymous connection's headers and closes it once its
// request is answered.
func (l *limitListener) connState(c net.Conn, st http.ConnState) {
	lc, ok := c.(*limitConn)
	if !ok {
		return
	}
	switch st {
	case http.StateNew:
		lc.cutAfter(l.anonHeader) // a new connection is anonymous
	case http.StateIdle:
		if !lc.mark.Authenticated() {
			l.forget(lc)
			_ = lc.Close()
			return
		}
	default:
		lc.cutAfter(0)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.waiting, lc)
	delete(l.busy, lc)
	switch st {
	case http.StateNew, http.StateIdle:
		l.waiting[lc] = time.Now()
	case http.StateActive:
		l.busy[lc] = time.Now() // whether it is anonymous is asked when it would be displaced
	}
}

// forget drops c from the displacement candidates.
func (l *limitListener) forget(c *limitConn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.waiting, c)
	delete(l.busy, c)
}

// Close stops Accept, also while it waits for a slot.
func (l *limitListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// connContext is the server's http.Server.ConnContext: the connection's authentication
// mark goes into its requests' context, for the console to set.
func connContext(ctx context.Context, c net.Conn) context.Context {
	if lc, ok := c.(*limitConn); ok {
		return connauth.With(ctx, &lc.mark)
	}
	return ctx
}

// limitConn gives its slot back when closed.
type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
	mark    connauth.Mark

	cutMu sync.Mutex
	cut   *time.Timer // closes the connection when its headers are late
}

// cutAfter closes c after d unless called again first; d ≤ 0 only stops the clock.
func (c *limitConn) cutAfter(d time.Duration) {
	c.cutMu.Lock()
	defer c.cutMu.Unlock()
	if c.cut != nil {
		c.cut.Stop()
		c.cut = nil
	}
	if d > 0 {
		c.cut = time.AfterFunc(d, func() { _ = c.Close() })
	}
}

func (c *limitConn) Close() error {
	c.cutAfter(0)
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
