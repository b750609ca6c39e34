package lazydeadline

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

func TestDeadlineIsTheTimeout(t *testing.T) {
	before := time.Now()
	c := WithTimeout(time.Minute)
	cancel := c.Cancel
	defer cancel()
	d, ok := c.Deadline()
	if !ok || d.Before(before.Add(time.Minute)) || d.After(time.Now().Add(time.Minute)) {
		t.Fatalf("deadline %v (%v), want a minute after %v", d, ok, before)
	}
	if err := c.Err(); err != nil {
		t.Fatalf("Err %v before the deadline", err)
	}
	if c.Value("anything") != nil {
		t.Fatal("a value from a context that carries none")
	}
}

func TestErrReadsTheClockWithoutATimer(t *testing.T) {
	c := WithTimeout(-time.Millisecond)
	cancel := c.Cancel
	defer cancel()
	if err := c.Err(); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Err %v past the deadline, want DeadlineExceeded", err)
	}
	select {
	case <-c.Done():
	default:
		t.Fatal("Done not closed once Err said the deadline passed")
	}
	cancel()
	if err := c.Err(); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Err %v after cancel, want the deadline's error to stay", err)
	}
}

func TestDoneClosesAtTheDeadline(t *testing.T) {
	c := WithTimeout(20 * time.Millisecond)
	cancel := c.Cancel
	defer cancel()
	select {
	case <-c.Done():
	case <-time.After(time.Minute):
		t.Fatal("Done not closed a minute after a 20 ms deadline")
	}
	if err := c.Err(); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Err %v, want DeadlineExceeded", err)
	}
}

func TestCancelEndsIt(t *testing.T) {
	for _, armFirst := range []bool{false, true} {
		c := WithTimeout(time.Hour)
		cancel := c.Cancel
		if armFirst {
			_ = c.Done()
		}
		cancel()
		if err := c.Err(); !errors.Is(err, context.Canceled) {
			t.Fatalf("armed first %v: Err %v after cancel, want Canceled", armFirst, err)
		}
		select {
		case <-c.Done():
		default:
			t.Fatalf("armed first %v: Done open after cancel", armFirst)
		}
	}
}

func TestChildrenAndAfterFuncsFollowIt(t *testing.T) {
	c := WithTimeout(time.Hour)
	cancel := c.Cancel
	child, childCancel := context.WithCancel(c)
	defer childCancel()
	ran := make(chan struct{})
	context.AfterFunc(c, func() { close(ran) })
	never := context.AfterFunc(c, func() { t.Error("a stopped AfterFunc ran") })
	if !never() {
		t.Fatal("stop before c was done did not stop the function")
	}
	if child.Err() != nil {
		t.Fatal("child done before its parent")
	}
	cancel()
	select {
	case <-child.Done():
	case <-time.After(time.Minute):
		t.Fatal("child not cancelled with its parent")
	}
	if !errors.Is(child.Err(), context.Canceled) {
		t.Fatalf("child Err %v, want Canceled", child.Err())
	}
	select {
	case <-ran:
	case <-time.After(time.Minute):
		t.Fatal("AfterFunc did not run once c was cancelled")
	}
}

func TestConcurrentWaitersAndCancel(t *testing.T) {
	c := WithTimeout(time.Hour)
	cancel := c.Cancel
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-c.Done()
			if c.Err() == nil {
				t.Error("Done closed with Err nil")
			}
		}()
	}
	cancel()
	wg.Wait()
}

// An order on a broker that never waits on Done costs one allocation: no timer.
func TestNoTimerUntilDone(t *testing.T) {
	allocs := testing.AllocsPerRun(100, func() {
		c := WithTimeout(time.Minute)
		cancel := c.Cancel
		_ = c.Err()
		cancel()
	})
	if allocs > 1 {
		t.Fatalf("%v allocations without a Done, want 1", allocs)
	}
}

func BenchmarkOrderContext(b *testing.B) {
	b.Run("lazy", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			c := WithTimeout(time.Minute)
			cancel := c.Cancel
			_ = c.Err()
			cancel()
		}
	})
	b.Run("std", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			c, cancel := context.WithTimeout(context.Background(), time.Minute)
			_ = c.Err()
			cancel()
		}
	})
	b.Run("lazy-armed", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			c := WithTimeout(time.Minute)
			cancel := c.Cancel
			_ = c.Done()
			cancel()
		}
	})
}
