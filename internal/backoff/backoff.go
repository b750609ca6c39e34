// Package backoff is the one retry-delay rule of the node: doubling from a base to a cap.
package backoff

import "time"

// Delay is the pause before attempt n+1 after n failures in a row: min(base·2^(n−1), max)
// (base for n ≤ 1).
func Delay(n int, base, max time.Duration) time.Duration {
	d := base
	for i := 1; i < n && d < max; i++ {
		d *= 2
	}
	return min(d, max)
}
