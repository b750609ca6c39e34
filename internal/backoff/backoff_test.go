package backoff

import (
	"testing"
	"time"
)

func TestDelay(t *testing.T) {
	for _, c := range []struct {
		n    int
		want time.Duration
	}{{0, time.Second}, {1, time.Second}, {2, 2 * time.Second}, {3, 4 * time.Second}, {5, 10 * time.Second}, {100, 10 * time.Second}} {
		if got := Delay(c.n, time.Second, 10*time.Second); got != c.want {
			t.Errorf("Delay(%d) = %v, want %v", c.n, got, c.want)
		}
	}
}

func TestDelayDoesNotOverflow(t *testing.T) {
	const huge = time.Duration(1<<63 - 1)
	if got := Delay(200, time.Second, huge); got != huge {
		t.Errorf("Delay(200, 1s, max) = %v, want the cap", got)
	}
	if got := Delay(1<<40, time.Millisecond, time.Second); got != time.Second {
		t.Errorf("Delay(2^40) = %v, want the cap", got)
	}
}

func TestJitterStaysInTheUpperHalf(t *testing.T) {
	if got := Jitter(0); got != 0 {
		t.Errorf("Jitter(0) = %v", got)
	}
	lo, hi := time.Duration(1<<62), time.Duration(0)
	for range 1000 {
		d := Jitter(time.Second)
		if d < 500*time.Millisecond || d > time.Second {
			t.Fatalf("Jitter(1s) = %v, outside [500ms, 1s]", d)
		}
		lo, hi = min(lo, d), max(hi, d)
	}
	// 1000 draws over a 500 ms range: all in one tenth of it would mean no jitter.
	if hi-lo < 50*time.Millisecond {
		t.Errorf("Jitter(1s) drew only from [%v, %v]", lo, hi)
	}
}
