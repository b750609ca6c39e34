package ratelog

import (
	"testing"
	"time"
)

func TestLimiterLetsOneLineAnIntervalThrough(t *testing.T) {
	var l Limiter
	t0 := time.Unix(1000, 0)
	if ok, n := l.Allow(t0); !ok || n != 0 {
		t.Fatalf("first line: %v %d", ok, n)
	}
	for i := range 1000 {
		if ok, _ := l.Allow(t0.Add(time.Duration(i) * time.Millisecond / 2)); ok {
			t.Fatalf("line %d within the second let through", i)
		}
	}
	if ok, n := l.Allow(t0.Add(time.Second)); !ok || n != 1000 {
		t.Fatalf("next second: %v, %d held back, want 1000", ok, n)
	}
	l2 := Limiter{Every: time.Minute}
	l2.Allow(t0)
	if ok, _ := l2.Allow(t0.Add(59 * time.Second)); ok {
		t.Fatal("Every ignored")
	}
}
