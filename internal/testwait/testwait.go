// Package testwait is the test suite's one way to wait for something.
//
// Two ways, in order of preference:
//   - Log.Await waits on events that the code under test reports (an observer hook, a
//     channel): the condition is re-checked each time an event arrives, never on a timer,
//     so it holds the same on a fast idle machine and a slow loaded one.
//   - For polls a condition on state the test cannot be told about (rows in PostgreSQL,
//     positions on the trade server), with a short growing pause and a deadline.
//
// Both fail the test with what was awaited and the last detail the condition gave. The
// deadline is a limit for a hung system, not a timing assumption: conditions must be
// ones that no other interleaving can reach early.
package testwait

import (
	"sync"
	"testing"
	"time"
)

// For calls cond until it reports true, pausing 1 ms, then longer (up to 50 ms) between
// calls; it fails tb when within has passed.
func For(tb testing.TB, what string, within time.Duration, cond func() (bool, string)) {
	tb.Helper()
	deadline := time.Now().Add(within)
	pause := time.Millisecond
	for {
		ok, detail := cond()
		if ok {
			return
		}
		if !time.Now().Before(deadline) {
			tb.Fatalf("%s: not reached within %v: %s", what, within, detail)
		}
		timer := time.NewTimer(min(pause, time.Until(deadline)))
		<-timer.C
		pause = min(2*pause, 50*time.Millisecond)
	}
}

// Log records the events of one run, from any goroutine, and lets a test wait until they
// say what it expects. The zero value is ready to use.
type Log[T any] struct {
	mu      sync.Mutex
	events  []T
	changed chan struct{} // closed and replaced on every Add
}

// Add records e and wakes every waiter. It never blocks for long: code under test may
// call it from its hot path.
func (l *Log[T]) Add(e T) {
	l.mu.Lock()
	l.events = append(l.events, e)
	if l.changed != nil {
		close(l.changed)
		l.changed = nil
	}
	l.mu.Unlock()
}

// Len is the number of events so far; pass it to Since to look only at later ones.
func (l *Log[T]) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.events)
}

// Since returns a copy of the events recorded after the first mark ones.
func (l *Log[T]) Since(mark int) []T {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]T(nil), l.events[min(mark, len(l.events)):]...)
}

// Await re-checks cond on the events after mark each time one arrives, until cond holds;
// it fails tb when within passes first.
func (l *Log[T]) Await(tb testing.TB, what string, mark int, within time.Duration, cond func(events []T) (bool, string)) {
	tb.Helper()
	timer := time.NewTimer(within)
	defer timer.Stop()
	for {
		l.mu.Lock()
		events := append([]T(nil), l.events[min(mark, len(l.events)):]...)
		if l.changed == nil {
			l.changed = make(chan struct{})
		}
		changed := l.changed
		l.mu.Unlock()
		ok, detail := cond(events)
		if ok {
			return
		}
		select {
		case <-changed:
		case <-timer.C:
			tb.Fatalf("%s: not reached within %v (%d events): %s", what, within, len(events), detail)
		}
	}
}
