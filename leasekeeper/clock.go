package leasekeeper

import (
	"fmt"
	"time"

	"github.com/snapcopier/copier/internal/boottime"
)

// Clock is the time source trust is measured on. Real nodes use SystemClock; tests inject
// a fake. Only differences of its readings matter: a reading is not a wall-clock time and
// is never sent to another machine or compared with one.
type Clock interface {
	Now() time.Time
	// Since is Now().Sub(t).
	Since(t time.Time) time.Duration
}

// SystemClock reads CLOCK_BOOTTIME: a monotonic clock that keeps counting while the
// machine or VM is suspended. Go's own monotonic clock (CLOCK_MONOTONIC) stops during a
// suspend, so after a resume a gate measured on it would still believe in trust that ran
// out in real time. Its readings are time values with no monotonic part, counted from
// boot; they are only ever compared with each other. A reading costs a call into the
// kernel's vDSO, not a system call (internal/boottime).
type SystemClock struct{}

// Now returns the boot-time reading.
func (SystemClock) Now() time.Time { return time.Unix(0, boottime.Nanos()) }

// Since returns the boot time elapsed since t (a reading of this clock).
func (SystemClock) Since(t time.Time) time.Duration {
	return time.Duration(boottime.Nanos() - t.UnixNano())
}

// CheckSystemClock reports whether CLOCK_BOOTTIME can be read here; a node checks it at
// start so that a reading never fails later.
func CheckSystemClock() error {
	if err := boottime.Check(); err != nil {
		return fmt.Errorf("leasekeeper: %w", err)
	}
	return nil
}
