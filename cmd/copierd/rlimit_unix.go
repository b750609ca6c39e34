//go:build unix

package main

import (
	"math"
	"syscall"
)

// fileLimit is the process's soft limit of open file descriptors.
func fileLimit() int {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur > math.MaxInt32 {
		return math.MaxInt32
	}
	return int(rl.Cur)
}
