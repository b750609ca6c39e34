package bridge

import (
	"time"

	"github.com/snapcopier/copier/internal/backoff"
)

// reconnects counts a client's failed reconnection attempts; the waits between them follow
// the node's one backoff rule (internal/backoff), jittered so that clients that lost one
// server together do not come back in lockstep.
type reconnects struct {
	min, max time.Duration
	attempt  int
}

// next is the wait before the next attempt: doubling from min to max, drawn from [d/2, d].
func (b *reconnects) next() time.Duration {
	b.attempt++
	return backoff.Jitter(backoff.Delay(b.attempt, b.min, b.max))
}

func (b *reconnects) reset() { b.attempt = 0 }
