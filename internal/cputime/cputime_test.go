package cputime_test

import (
	"os"
	"testing"
	"time"

	"github.com/snapcopier/copier/internal/cputime"
)

// Work on this goroutine shows in the process's CPU time: the reading moves forward, by
// at least the rusage's resolution, and never back.
func TestProcessAdvancesWithWork(t *testing.T) {
	start := cputime.Process()
	x := uint64(1)
	for cputime.Process() == start {
		for range 1 << 16 {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	if end := cputime.Process(); end < start {
		t.Fatalf("CPU time went back: %v then %v (%d)", start, end, x)
	}
}

// Of reads another process's CPU time: for this process it agrees with Process to a few
// clock ticks (utime and stime are each rounded) and moves forward with work; a process
// that does not exist is an error.
func TestOfReadsAProcess(t *testing.T) {
	pid := os.Getpid()
	start, err := cputime.Of(pid)
	if err != nil {
		t.Fatal(err)
	}
	x := uint64(1)
	for {
		now, err := cputime.Of(pid)
		if err != nil {
			t.Fatal(err)
		}
		if now > start {
			break
		}
		for range 1 << 16 {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	before, _ := cputime.Of(pid)
	self := cputime.Process()
	after, _ := cputime.Of(pid)
	if self < before-30*time.Millisecond || self > after+30*time.Millisecond {
		t.Fatalf("Of %v..%v, Process %v (%d): more than three ticks apart", before, after, self, x)
	}
	if _, err := cputime.Of(1 << 30); err == nil {
		t.Fatal("no error for a process that does not exist")
	}
}
