//go:build !amd64

package boottime

import (
	"errors"

	"golang.org/x/sys/unix"
)

// vdsoClockGettime is 0 here: only amd64 has the call into the vDSO; Nanos uses the
// system call.
const vdsoClockGettime uintptr = 0

func vdsoRead(*unix.Timespec) int32 { panic("boottime: no vDSO call on this architecture") }

func locate() (uintptr, error) { return 0, errors.New("boottime: no vDSO call on this architecture") }
