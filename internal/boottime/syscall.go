package boottime

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

func rawClockGettime(ts *unix.Timespec) unix.Errno {
	_, _, errno := unix.RawSyscall(unix.SYS_CLOCK_GETTIME, unix.CLOCK_BOOTTIME, uintptr(unsafe.Pointer(ts)), 0)
	return errno
}
