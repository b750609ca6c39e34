// Package boottime reads CLOCK_BOOTTIME, the monotonic clock that keeps counting while
// the machine or VM is suspended, at the cost of a function call instead of a system call
// where it can: through the kernel's vDSO, as Go's runtime reads its own clocks. The lease
// gate reads it before every order (leasekeeper.SystemClock).
//
// Go reaches the vDSO only for CLOCK_REALTIME and CLOCK_MONOTONIC. Where the vDSO's
// clock_gettime cannot be found (another architecture, no /proc, a vDSO without section
// headers), Nanos falls back to the raw system call: the same clock, slower.
package boottime

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// Check reports whether CLOCK_BOOTTIME can be read here by both paths; a node checks it
// at start so that Nanos never fails later.
func Check() error {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		return fmt.Errorf("boottime: CLOCK_BOOTTIME cannot be read: %w", err)
	}
	if vdsoClockGettime != 0 {
		if errno := vdsoRead(&ts); errno != 0 {
			return fmt.Errorf("boottime: CLOCK_BOOTTIME through the vDSO: %w", unix.Errno(errno))
		}
	}
	return nil
}

// Nanos reads CLOCK_BOOTTIME in nanoseconds. It cannot fail on Linux ≥ 2.6.39 for this
// clock id (Check proves it at start); a failure later would make every lease gate
// unsound, so it stops the process.
func Nanos() int64 {
	var ts unix.Timespec
	if vdsoClockGettime != 0 {
		if errno := vdsoRead(&ts); errno != 0 {
			panic(fmt.Sprintf("boottime: CLOCK_BOOTTIME through the vDSO: %v", unix.Errno(errno)))
		}
		return ts.Nano()
	}
	return syscallNanos()
}

// ViaVDSO reports whether Nanos reads through the vDSO (false: one system call a reading).
func ViaVDSO() bool { return vdsoClockGettime != 0 }

// syscallNanos is the system call. clock_gettime never blocks, so it is issued raw,
// without the scheduler's hand-off that unix.ClockGettime pays for.
func syscallNanos() int64 {
	var ts unix.Timespec
	if errno := rawClockGettime(&ts); errno != 0 {
		panic(fmt.Sprintf("boottime: CLOCK_BOOTTIME: %v", errno))
	}
	return ts.Nano()
}
