// Package cputime reads the CPU time this process has used, for benchmarks that report
// CPU per unit of work beside wall-clock figures.
package cputime

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Process is the user and system CPU time the process has used so far (all its threads).
func Process() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Of is the user and system CPU time process pid has used so far, from /proc/PID/stat
// (Linux; counted in clock ticks of 10 ms): another process's cost, such as a PostgreSQL
// backend's for the statements a benchmark sends it.
func Of(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name is in parentheses and may hold spaces: the fields start after
	// the last ')'; utime and stime are the 12th and 13th after it.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("cputime: /proc/%d/stat: %d fields", pid, len(f))
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("cputime: /proc/%d/stat: utime %q, stime %q", pid, f[11], f[12])
	}
	return time.Duration(ut+st) * (time.Second / clockTicks), nil
}

// clockTicks is USER_HZ, the unit of /proc/PID/stat's times: 100 on every Linux this
// runs on.
const clockTicks = 100
