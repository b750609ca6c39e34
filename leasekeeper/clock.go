package leasekeeper

import (
	"fmt"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
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
// boot; they are only ever compared with each other.
type SystemClock struct{}

// Now returns the boot-time reading.
func (SystemClock) Now() time.Time { return time.Unix(0, bootNanos()) }

// Since returns the boot time elapsed since t (a reading of this clock).
func (SystemClock) Since(t time.Time) time.Duration {
	return time.Duration(bootNanos() - t.UnixNano())
}

// CheckSystemClock reports whether CLOCK_BOOTTIME can be read here; a node checks it at
// start so that bootNanos never fails later.
func CheckSystemClock() error {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		return fmt.Errorf("leasekeeper: CLOCK_BOOTTIME cannot be read: %w", err)
	}
	return nil
}

// bootNanos reads CLOCK_BOOTTIME in nanoseconds. It cannot fail on Linux ≥ 2.6.39 for this
// clock id (CheckSystemClock proves it at start); a failure later would make every gate
// unsound, so it stops the process. clock_gettime never blocks, so it is called as a raw
// system call, without the scheduler's hand-off that unix.ClockGettime pays for (Go reaches
// the kernel's vDSO only for its own clocks, not for CLOCK_BOOTTIME).
func bootNanos() int64 {
	var ts unix.Timespec
	if _, _, errno := unix.RawSyscall(unix.SYS_CLOCK_GETTIME, unix.CLOCK_BOOTTIME, uintptr(unsafe.Pointer(&ts)), 0); errno != 0 {
		panic(fmt.Sprintf("leasekeeper: CLOCK_BOOTTIME: %v", errno))
	}
	return ts.Nano()
}
