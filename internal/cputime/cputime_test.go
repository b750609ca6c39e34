package cputime_test

import (
	"testing"

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
