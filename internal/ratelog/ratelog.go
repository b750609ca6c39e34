// Package ratelog limits a flood of like log lines (refused logons, bad tokens) to one
// per interval, counting the ones it holds back so the next line can report them.
package ratelog

import (
	"sync"
	"time"
)

// Limiter lets one line per Every through. The zero value lets one a second through.
type Limiter struct {
	Every time.Duration

	mu         sync.Mutex
	last       time.Time
	suppressed int
}

// Allow reports whether a line may be logged at now and, when it may, how many were held
// back since the last one let through.
func (l *Limiter) Allow(now time.Time) (bool, int) {
	every := l.Every
	if every <= 0 {
		every = time.Second
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.last.IsZero() && now.Sub(l.last) < every {
		l.suppressed++
		return false, 0
	}
	n := l.suppressed
	l.last, l.suppressed = now, 0
	return true, n
}
