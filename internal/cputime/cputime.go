// Package cputime reads the CPU time this process has used, for benchmarks that report
// CPU per unit of work beside wall-clock figures.
package cputime

import (
	"syscall"
	"time"
)

// Process is the user and system CPU time the process has used so far (all its threads).
func Process() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
