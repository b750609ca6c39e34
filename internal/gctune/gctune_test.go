package gctune

import (
	"runtime/debug"
	"strconv"
	"testing"
)

// current reads the collector's target (SetGCPercent returns the one it replaces).
func current() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func TestApply(t *testing.T) {
	defer debug.SetGCPercent(current())
	debug.SetGCPercent(100)

	v, src, err := Apply(DefaultPercent, false, env(nil))
	if err != nil || src != FromFlag || v != strconv.Itoa(DefaultPercent) || current() != DefaultPercent {
		t.Fatalf("no GOGC: want %d from the flag, got %d (%q from %s, %v)", DefaultPercent, current(), v, src, err)
	}

	debug.SetGCPercent(150) // as if the runtime had read GOGC=150
	v, src, err = Apply(DefaultPercent, false, env(map[string]string{"GOGC": "150"}))
	if err != nil || src != FromGOGC || v != "150" || current() != 150 {
		t.Fatalf("GOGC=150, flag default: want 150 from GOGC, got %d (%q from %s, %v)", current(), v, src, err)
	}

	v, src, err = Apply(250, true, env(map[string]string{"GOGC": "150"}))
	if err != nil || src != FromFlag || v != "250" || current() != 250 {
		t.Fatalf("GOGC=150, flag given: want 250 from the flag, got %d (%q from %s, %v)", current(), v, src, err)
	}

	for _, bad := range []int{MinPercent - 1, MaxPercent + 1, -1, 0} {
		if _, _, err := Apply(bad, true, env(nil)); err == nil || current() != 250 {
			t.Fatalf("percent %d: want an error and the target left at 250, got %d, %v", bad, current(), err)
		}
	}
}
