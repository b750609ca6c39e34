// Package gctune sets the Go collector's heap target for a node process. A node's heap
// is mostly long-lived account state, and every copied order allocates a little; at Go's
// default target (GOGC=100: collect when the heap has doubled) a node holding thousands
// of accounts spends a seventh of its CPU marking that state again and again, and its
// goroutines help the collector (assists) in the middle of a fan-out. A higher target
// trades memory for both; GOMEMLIMIT, when set, still bounds the heap (the runtime
// collects sooner as the heap nears it).
package gctune

import (
	"fmt"
	"runtime/debug"
	"strconv"
)

// DefaultPercent is the heap target a node runs with unless told otherwise: collect when
// the heap has grown to three times what the last collection left (BENCHMARKS.md: at
// 10,000 followers on one node, RSS 383 → 550 MB against Go's 100, CPU −30 %; 400 took
// 802 MB for little more).
const DefaultPercent = 200

// MinPercent and MaxPercent bound the accepted targets: below 10 the collector runs
// almost without pause, above 10,000 a node's heap grows a hundredfold between collections.
const (
	MinPercent = 10
	MaxPercent = 10_000
)

// Source says where the target in force came from.
type Source string

// Sources.
const (
	FromFlag Source = "flag"
	FromGOGC Source = "GOGC"
)

// Apply sets the collector's target to percent, unless the GOGC environment variable
// (getenv("GOGC")) is set and percent was not asked for explicitly: then GOGC, which the
// runtime has already applied, stays. It returns the target in force as GOGC would spell
// it ("400", "off") and where it came from, or an error for a percent outside
// [MinPercent, MaxPercent] (nothing is changed then).
func Apply(percent int, explicit bool, getenv func(string) string) (string, Source, error) {
	if percent < MinPercent || percent > MaxPercent {
		return "", "", fmt.Errorf("gc percent %d out of range [%d, %d]", percent, MinPercent, MaxPercent)
	}
	if v := getenv("GOGC"); v != "" && !explicit {
		return v, FromGOGC, nil
	}
	debug.SetGCPercent(percent)
	return strconv.Itoa(percent), FromFlag, nil
}
