// Package backoff is the one retry-delay rule of the node: doubling from a base to a cap,
// optionally jittered (Jitter) where many clients fail together.
package backoff

import (
	"math/rand/v2"
	"time"
)

// Delay is the pause before attempt n+1 after n failures in a row: min(base·2^(n−1), max)
// (base for n ≤ 1). It never overflows, however large n is.
func Delay(n int, base, max time.Duration) time.Duration {
	d := base
	for i := 1; i < n && d < max; i++ {
		if d > max/2 {
			return max
		}
		d *= 2
	}
	return min(d, max)
}

// Jitter draws a wait uniformly from [d/2, d], so that clients that lost one server
// together do not come back in lockstep.
func Jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	half := d / 2
	return half + rand.N(d-half+1)
}
