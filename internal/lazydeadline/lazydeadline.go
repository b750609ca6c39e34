// Package lazydeadline is a context with a deadline whose timer starts only when someone
// waits on it. An order's context carries the earlier of the order timeout and the lease's
// trust; a broker that waits on the wire (the bridge, FIX) selects on Done and so arms the
// timer as context.WithTimeout would, but the in-process simulator only reads Err, and for
// it the timer, its closure and the cancel context were five allocations per order
// (BENCHMARKS.md).
package lazydeadline

import (
	"context"
	"sync"
	"time"
)

// Context is a context.Context with a fixed deadline and no values. Until Done or AfterFunc
// is called it holds no timer: Err reads the clock. Once armed it behaves as the context of
// context.WithDeadline, which it then holds.
type Context struct {
	// The deadline is start + timeout. Err and Cancel compare time.Since(start) with
	// timeout: the monotonic clock alone, one reading where time.Now reads two (the wall
	// clock too), on every order.
	start   time.Time
	timeout time.Duration

	mu     sync.Mutex
	err    error              // set once, by the first cancel or the first Err past the deadline
	inner  context.Context    // context.WithDeadline's, made by the first Done or AfterFunc
	cancel context.CancelFunc // inner's
}

// WithTimeout is context.WithTimeout(context.Background(), timeout) without the timer
// until a caller waits on Done. Cancel is its cancel function (a method, not a returned
// func: a method value would be a second allocation).
func WithTimeout(timeout time.Duration) *Context {
	return &Context{start: time.Now(), timeout: timeout}
}

// Deadline implements context.Context.
func (c *Context) Deadline() (time.Time, bool) { return c.deadline(), true }

func (c *Context) deadline() time.Time { return c.start.Add(c.timeout) }

// Value implements context.Context: the context carries no values.
func (c *Context) Value(any) any { return nil }

// Done implements context.Context; the first call arms the timer.
func (c *Context) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.armLocked().Done()
}

// AfterFunc arranges for f to run in its own goroutine once c is done, as context.AfterFunc
// does (context.AfterFunc and the contexts derived from c use it: no goroutine per child).
func (c *Context) AfterFunc(f func()) (stop func() bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return context.AfterFunc(c.armLocked(), f)
}

// Err implements context.Context: nil while the deadline is ahead and nothing cancelled c.
func (c *Context) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return c.err
	}
	if c.inner != nil {
		return c.inner.Err()
	}
	if c.passed() {
		c.err = context.DeadlineExceeded
	}
	return c.err
}

// passed reports whether the deadline has passed: !time.Now().Before(c.deadline()), read on
// the monotonic clock only.
func (c *Context) passed() bool { return time.Since(c.start) >= c.timeout }

// armLocked makes the inner context the first time, done at once when c already is.
func (c *Context) armLocked() context.Context {
	if c.inner == nil {
		c.inner, c.cancel = context.WithDeadline(context.Background(), c.deadline())
		if c.err != nil {
			c.cancel()
		}
	}
	return c.inner
}

// Cancel ends c and releases its timer if one was armed; the first of Cancel and the
// deadline decides Err.
func (c *Context) Cancel() {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.inner != nil:
		c.cancel() // an inner context whose timer fired keeps DeadlineExceeded
		if c.err == nil {
			c.err = c.inner.Err()
		}
	case c.err != nil:
	case c.passed():
		c.err = context.DeadlineExceeded
	default:
		c.err = context.Canceled
	}
}
