// Package leasekeeper holds the node's lease arithmetic and the gate that every order
// passes, and (in the engine) the LeaseKeeper actor that runs one lease cycle per interval.
//
// The rule (DESIGN §4, the seed): read the monotonic clock before the cycle's transaction
// begins (started); after a successful cycle, trust ownership until
// started + lease − fence. The database wrote lease_until = now() + lease at some moment
// after started, so the node stops at least fence before any other node can claim. Only
// elapsed time on the node's own monotonic clock matters; nothing is compared with the
// database's clock or another machine's.
package leasekeeper

import (
	"errors"
	"fmt"
	"time"
)

// Defaults from the seed: a 60 s lease, a 15 s fence, one cycle every 20 s.
const (
	DefaultLease    = 60 * time.Second
	DefaultFence    = 15 * time.Second
	DefaultInterval = 20 * time.Second
)

// Config is the lease timing of a node.
type Config struct {
	Lease    time.Duration // lease_until = now() + Lease on every renewal
	Fence    time.Duration // stop sending this long before the lease could end
	Interval time.Duration // time between cycle starts
}

// DefaultConfig returns the seed's timing.
func DefaultConfig() Config {
	return Config{Lease: DefaultLease, Fence: DefaultFence, Interval: DefaultInterval}
}

// ErrBadConfig is wrapped by every Validate error.
var ErrBadConfig = errors.New("invalid lease configuration")

// Validate checks 0 < fence < lease and 0 < interval < lease − fence: a node must renew
// before its trust runs out, or it would close its own gate between healthy cycles.
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
	}
	return nil
}

// Trust is how long a successful cycle lets the node act: lease − fence.
func (c Config) Trust() time.Duration { return c.Lease - c.Fence }

// CycleDeadline bounds one cycle: it must end (commit or give up) before the trust it
// would grant has run out, so a hung cycle cannot hold row locks for long.
func (c Config) CycleDeadline() time.Duration { return c.Trust() }

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
