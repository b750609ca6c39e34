// Package leasekeeper holds the node's lease arithmetic and the gate that every order
// passes, and (in the engine) the LeaseKeeper actor that runs one lease cycle per interval.
//
// The rule (docs/design.md §2): read the clock before the cycle's transaction begins
// (started); after a successful cycle, trust ownership until started + lease − fence. The
// database wrote lease_until = now() + lease at some moment after started, so the node
// stops at least fence before any other node can claim. Only elapsed time on the node's
// own clock matters; nothing is compared with the database's clock or another machine's.
// That clock is CLOCK_BOOTTIME (SystemClock), which keeps counting while the machine is
// suspended: Go's monotonic clock stops, and a resumed host would trust a lease that ran
// out in real time.
//
// A gate check returns a Ticket: the epoch and the absolute end of the trust, read
// together once. An order's token, its context deadline and the absolute deadline it
// carries to the trade server all derive from one ticket's end (docs/design.md §3): a pause after
// the check shortens them and never moves them past the trust's end. The receiver refuses a request whose
// deadline has passed by its own clock, which is safe while fence > clock skew + drift
// (Config.Validate).
//
// The LeaseKeeper is a pure core (core.go: typed inputs in, a ready of effects out; no
// clock, no I/O, no goroutines) inside a thin actor (keeper.go) that reads the clocks,
// runs the queries and carries out the effects. The rules of the fence read as the
// scenarios in testdata/ (cycle.txt, handoff.txt, shutdown.txt), which print the whole
// ready of every input; go test -run TestKeeperCore -rewrite rewrites them.
package leasekeeper

import (
	"errors"
	"fmt"
	"time"
)

// Defaults from the seed: a 60 s lease, a 15 s fence, one cycle every 20 s; clocks kept
// within 500 ms of each other (NTP keeps them within milliseconds).
const (
	DefaultLease     = 60 * time.Second
	DefaultFence     = 15 * time.Second
	DefaultInterval  = 20 * time.Second
	DefaultClockSkew = 500 * time.Millisecond
)

// maxDriftPPM bounds how fast two machines' clocks drift apart: 1000 ppm (1 ms per second)
// is ten times what an undisciplined quartz clock does.
const maxDriftPPM = 1000

// MaxDrift is the most two clocks drift apart over one lease.
func (c Config) MaxDrift() time.Duration { return c.Lease * maxDriftPPM / 1_000_000 }

// Config is the lease timing of a node.
type Config struct {
	Lease    time.Duration // lease_until = now() + Lease on every renewal
	Fence    time.Duration // stop sending this long before the lease could end
	Interval time.Duration // time between cycle starts
	// ClockSkew is the most the clocks of this node and of the trade servers (or bridges)
	// that check an order's deadline may disagree. A receiver refuses an order whose
	// deadline has passed by its own clock, which is safe while
	// fence > clock skew + clock drift over one lease (docs/design.md §3).
	ClockSkew time.Duration
}

// DefaultConfig returns the seed's timing.
func DefaultConfig() Config {
	return Config{Lease: DefaultLease, Fence: DefaultFence, Interval: DefaultInterval, ClockSkew: DefaultClockSkew}
}

// ErrBadConfig is wrapped by every Validate error.
var ErrBadConfig = errors.New("invalid lease configuration")

// Validate checks 0 < fence < lease and 0 < interval < lease − fence (a node must renew
// before its trust runs out, or it would close its own gate between healthy cycles), and
// fence > clock skew + drift (an order's deadline is checked by the receiver's clock).
func (c Config) Validate() error {
	switch {
	case c.Lease <= 0:
		return fmt.Errorf("%w: lease must be positive, got %v", ErrBadConfig, c.Lease)
	case c.Fence <= 0:
		return fmt.Errorf("%w: fence must be positive, got %v", ErrBadConfig, c.Fence)
	case c.Fence >= c.Lease:
		return fmt.Errorf("%w: fence (%v) must be shorter than lease (%v)", ErrBadConfig, c.Fence, c.Lease)
	case c.Interval <= 0:
		return fmt.Errorf("%w: interval must be positive, got %v", ErrBadConfig, c.Interval)
	case c.Interval >= c.Lease-c.Fence:
		return fmt.Errorf("%w: interval (%v) must be shorter than lease − fence (%v), or trust lapses between cycles", ErrBadConfig, c.Interval, c.Lease-c.Fence)
	case c.ClockSkew < 0:
		return fmt.Errorf("%w: clock skew must be ≥ 0, got %v", ErrBadConfig, c.ClockSkew)
	case c.Fence <= c.ClockSkew+c.MaxDrift():
		return fmt.Errorf("%w: fence (%v) must exceed clock skew (%v) + clock drift over one lease (%v), or a receiver with a slow clock could accept an order after another node took over",
			ErrBadConfig, c.Fence, c.ClockSkew, c.MaxDrift())
	}
	return nil
}

// Trust is how long a successful cycle lets the node act: lease − fence.
func (c Config) Trust() time.Duration { return c.Lease - c.Fence }

// CycleDeadline bounds one cycle to ¾ of the trust it would grant (docs/design.md §2: shorter than
// lease − fence): a cycle that ends at its deadline still leaves a quarter of the trust,
// and a hung cycle cannot hold row locks for long.
func (c Config) CycleDeadline() time.Duration { return c.Trust() * 3 / 4 }

// Lease is the trust one committed cycle grants. Started is the monotonic reading taken
// before the cycle's transaction began.
type Lease struct {
	Started time.Time
	Config  Config
}

// TrustedUntil is Started + lease − fence. It does not depend on when the cycle finished:
// a slow successful cycle grants less remaining trust, never more.
func (l Lease) TrustedUntil() time.Time { return l.Started.Add(l.Config.Trust()) }

// Holds reports whether the lease is still trusted at now.
func (l Lease) Holds(now time.Time) bool { return now.Before(l.TrustedUntil()) }

// DefaultShutdownTimeout is the budget of a clean shutdown when none is given.
const DefaultShutdownTimeout = 30 * time.Second

// ShutdownSplit divides one shutdown budget, from now until deadline: the accounts get
// half of it to stop, the status flush a quarter, and the release of the leases keeps
// the last quarter at least (everything the first two did not use), so it always runs.
func ShutdownSplit(now, deadline time.Time) (accountsBy, flushBy time.Time) {
	b := max(deadline.Sub(now), 0)
	return now.Add(b / 2), now.Add(b * 3 / 4)
}

// releaseBy is when the release must give up: a little before the deadline (at most
// 500 ms, a twentieth of the budget when it is short), so that its answer still reaches
// the caller waiting on the same budget. A release that already missed it still gets a
// short second of its own: letting go fast matters more than the caller's deadline.
func releaseBy(now, deadline time.Time) time.Time {
	b := deadline.Sub(now)
	if b <= 0 {
		return now.Add(time.Second)
	}
	return deadline.Add(-min(b/20, 500*time.Millisecond))
}
