package leasekeeper

import (
	"sync/atomic"
	"time"
)

// Gate answers "may I send an order now?" with one atomic load and one clock read: no
// lock, no allocation, no actor round trip. It opens when a cycle confirms a lease and
// closes by itself when the trusted deadline passes.
//
// An account's gate belongs to one lease epoch: a new epoch gets a new gate. The deadline
// is kept as an offset from base on the gate's clock, so it fits in one atomic int64.
type Gate struct {
	clock    Clock
	base     time.Time
	epoch    int64
	deadline atomic.Int64 // ns since base; trust ends here; 0 = closed; fenced = closed for good
}

// fenced is the deadline of a gate closed for good: no confirmation reopens it.
const fenced = -1

// NewGate returns a closed gate reading clock (the node-wide gate, epoch 0). Gates that
// are compared with each other should share a clock.
func NewGate(clock Clock) *Gate { return NewEpochGate(clock, 0) }

// NewEpochGate returns a closed gate for one account's lease epoch.
func NewEpochGate(clock Clock, epoch int64) *Gate {
	if clock == nil {
		clock = SystemClock{}
	}
	// base sits well before any reading so that an offset of 0 always means "closed".
	return &Gate{clock: clock, base: clock.Now().Add(-time.Hour), epoch: epoch}
}

// HoldsLease reports whether the trusted deadline lies in the future.
func (g *Gate) HoldsLease() bool {
	return int64(g.clock.Since(g.base)) < g.deadline.Load()
}

// Ticket is what one gate check grants: the epoch and the absolute end of the trust,
// read together once. Everything an order carries (its token, its context deadline, its
// deadline on the wire) derives from one Ticket: a later deadline is Until minus a new
// clock reading, never a new reading plus the trust left at the check, so a pause between
// the check and the send (GC, VM stall, suspend) shortens what is left instead of moving
// every deadline past the trust's end by the pause.
type Ticket struct {
	Epoch int64
	// Until is the end of the trust on the gate's clock, as the check read it; At is the
	// check's reading (Until − At was the trust left then: never to be added to a later
	// reading).
	Until, At time.Time
	clock     Clock
}

// Left is how long the ticket's trust lasts from now (≤ 0 once Until has passed).
func (t Ticket) Left() time.Duration { return -t.clock.Since(t.Until) }

// Check is HoldsLease that also returns the Ticket: one atomic load, one clock read.
func (g *Gate) Check() (Ticket, bool) {
	d := g.deadline.Load()
	at := g.clock.Now()
	if d <= 0 || int64(at.Sub(g.base)) >= d {
		return Ticket{}, false
	}
	return Ticket{Epoch: g.epoch, Until: g.base.Add(time.Duration(d)), At: at, clock: g.clock}, true
}

// Epoch is the lease epoch this gate belongs to.
func (g *Gate) Epoch() int64 { return g.epoch }

// Confirm extends trust to l.TrustedUntil(). It never moves the deadline backwards (a
// confirmation from an older cycle arriving late changes nothing) and never reopens a
// fenced gate.
func (g *Gate) Confirm(l Lease) {
	until := int64(l.TrustedUntil().Sub(g.base))
	for {
		cur := g.deadline.Load()
		if cur == fenced || until <= cur {
			return
		}
		if g.deadline.CompareAndSwap(cur, until) {
			return
		}
	}
}

// Revoke closes the gate at once (lost account, shutdown). A later confirmation at the
// same epoch may open it again.
func (g *Gate) Revoke() {
	for {
		cur := g.deadline.Load()
		if cur == fenced || g.deadline.CompareAndSwap(cur, 0) {
			return
		}
	}
}

// Fence closes the gate for good: the trade server saw a newer token (another node owns
// the account), or the node halted. Only a new epoch, with a new gate, sends again.
func (g *Gate) Fence() { g.deadline.Store(fenced) }

// Fenced reports whether Fence closed the gate.
func (g *Gate) Fenced() bool { return g.deadline.Load() == fenced }

// TrustedUntil returns the deadline (a reading of the gate's clock), and false when the
// gate has never been confirmed or was revoked.
func (g *Gate) TrustedUntil() (time.Time, bool) {
	d := g.deadline.Load()
	if d <= 0 {
		return time.Time{}, false
	}
	return g.base.Add(time.Duration(d)), true
}

// Remaining is how long the gate stays open from now (≤ 0 when closed).
func (g *Gate) Remaining() time.Duration {
	d := g.deadline.Load()
	if d <= 0 {
		return 0
	}
	return time.Duration(d) - g.clock.Since(g.base)
}
