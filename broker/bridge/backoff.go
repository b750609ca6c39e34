package bridge

import (
	"math/rand/v2"
	"time"
)

// backoff yields exponentially growing, jittered waits between min and max. Each wait is
// drawn uniformly from [d/2, d] where d doubles per attempt up to max, so clients that
// lost one server together do not come back in lockstep.
type backoff struct {
	min, max time.Duration
	attempt  int
}

func (b *backoff) next() time.Duration {
	d := b.max
	if b.attempt < 32 {
		if e := b.min << b.attempt; e > 0 && e < b.max {
			d = e
		}
	}
	b.attempt++
	half := d / 2
	return half + rand.N(d-half+1)
}

func (b *backoff) reset() { b.attempt = 0 }
