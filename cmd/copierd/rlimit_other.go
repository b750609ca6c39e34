//go:build !unix

package main

import "math"

// fileLimit is unknown here: no descriptor limit to derive a cap from.
func fileLimit() int { return math.MaxInt32 }
