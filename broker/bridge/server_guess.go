package bridge

import (
	"sync"
	"time"
)

// Back-off of bad tokens, per source: the first few refusals are immediate (a mistyped
// token), then each waits twice as long as the one before, up to a cap. A source without
// a bad token for guessForget starts over.
const (
	guessFree    = 3
	guessDelay   = 100 * time.Millisecond
	guessMax     = 5 * time.Second
	guessForget  = time.Minute
	guessSources = 10000 // sources remembered; the stale ones go first, else the oldest
)

// guessLog counts bad tokens by source (30,224 wrong tokens from one address in 10 s were
// once refused at full speed).
type guessLog struct {
	mu sync.Mutex
	by map[string]*guesses
}

type guesses struct {
	n    int
	last time.Time
}

// failed records a bad token from source at now and returns how long its refusal waits.
func (g *guessLog) failed(source string, now time.Time) time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.by == nil {
		g.by = map[string]*guesses{}
	}
	e := g.by[source]
	if e == nil || now.Sub(e.last) > guessForget {
		if len(g.by) >= guessSources {
			g.prune(now)
		}
		e = &guesses{}
		g.by[source] = e
	}
	e.n++
	e.last = now
	return guessDelayFor(e.n)
}

// guessDelayFor is the wait of the n-th bad token in a row.
func guessDelayFor(n int) time.Duration {
	if n <= guessFree {
		return 0
	}
	d := guessDelay
	for i := guessFree + 1; i < n && d < guessMax; i++ {
		d *= 2
	}
	return min(d, guessMax)
}

// prune forgets the stale sources, or the oldest one when none is stale.
func (g *guessLog) prune(now time.Time) {
	var oldest string
	for s, e := range g.by {
		if now.Sub(e.last) > guessForget {
			delete(g.by, s)
		} else if oldest == "" || e.last.Before(g.by[oldest].last) {
			oldest = s
		}
	}
	if len(g.by) >= guessSources {
		delete(g.by, oldest)
	}
}
