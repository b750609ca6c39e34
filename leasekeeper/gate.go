package leasekeeper

import (
	"sync/atomic"
	"time"
)

// Clock is the monotonic time source. Real nodes use SystemClock; tests inject a fake.
type Clock interface {
	Now() time.Time
	// Since is Now().Sub(t); SystemClock reads only the monotonic clock for it, which is
	// about half the cost of time.Now.
	Since(t time.Time) time.Duration
}

// SystemClock reads time.Now, whose monotonic reading makes differences immune to steps of
// the wall clock.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// Since returns time.Since(t).
func (SystemClock) Since(t time.Time) time.Duration { return time.Since(t) }

// Gate answers "may I send an order now?" with one atomic load and one clock read: no
// lock, no allocation, no actor round trip. It opens when a cycle confirms a lease and
// closes by itself when the trusted deadline passes.
//
// The deadline is kept as an offset from base on the same monotonic clock, so it fits in
// one atomic int64.
type Gate struct {
	clock    Clock
	base     time.Time
	deadline atomic.Int64 // ns since base; trust ends here; 0 = closed
}

// NewGate returns a closed gate reading clock. Gates that are compared with each other
// should share a clock.
func NewGate(clock Clock) *Gate {
	if clock == nil {
		clock = SystemClock{}
	}
	// base sits well before any reading so that an offset of 0 always means "closed".
	return &Gate{clock: clock, base: clock.Now().Add(-time.Hour)}
}

// HoldsLease reports whether the trusted deadline lies in the future.
func (g *Gate) HoldsLease() bool {
	return int64(g.clock.Since(g.base)) < g.deadline.Load()
}

// Confirm extends trust to l.TrustedUntil(). It never moves the deadline backwards: a
// confirmation from an older cycle arriving late changes nothing.
func (g *Gate) Confirm(l Lease) {
	until := int64(l.TrustedUntil().Sub(g.base))
	for {
		cur := g.deadline.Load()
		if until <= cur || g.deadline.CompareAndSwap(cur, until) {
			return
		}
	}
}

// Revoke closes the gate at once (lost account, shutdown).
func (g *Gate) Revoke() { g.deadline.Store(0) }

// TrustedUntil returns the deadline, and false when the gate has never been confirmed or
// was revoked.
func (g *Gate) TrustedUntil() (time.Time, bool) {
	d := g.deadline.Load()
	if d == 0 {
		return time.Time{}, false
	}
	return g.base.Add(time.Duration(d)), true
}

// Remaining is how long the gate stays open from now (≤ 0 when closed).
func (g *Gate) Remaining() time.Duration {
	d := g.deadline.Load()
	if d == 0 {
		return 0
	}
	return time.Duration(d) - g.clock.Since(g.base)
}
