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
