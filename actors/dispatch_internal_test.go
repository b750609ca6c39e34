package actors

import (
	"sync"
	"testing"
)

// TestWorkerDispatcherNeverQueuesARunBehindABlockedOne: a run that blocks (a broker call
// waiting on its venue) must not hold back another mailbox's run, whether or not a worker
// is waiting; every scheduled run runs once; Close ends the waiting workers (the package's
// goroutine leak check fails otherwise).
func TestWorkerDispatcherNeverQueuesARunBehindABlockedOne(t *testing.T) {
	d := newWorkerDispatcher(1)
	defer d.Close()

	// Warm the pool: a worker that ran something waits for the next run.
	var warm sync.WaitGroup
	for range 4 {
		warm.Add(1)
		d.Schedule(warm.Done)
	}
	warm.Wait()

	release := make(chan struct{})
	blocked := make(chan struct{}, 8)
	for range 8 {
		d.Schedule(func() { blocked <- struct{}{}; <-release })
	}
	for range 8 {
		<-blocked
	}
	// Every worker is busy: the next runs must still run, at once, while those block.
	var ran sync.WaitGroup
	counts := make([]int, 100)
	var mu sync.Mutex
	for i := range counts {
		ran.Add(1)
		d.Schedule(func() { mu.Lock(); counts[i]++; mu.Unlock(); ran.Done() })
	}
	ran.Wait()
	close(release)
	for i, n := range counts {
		if n != 1 {
			t.Fatalf("run %d ran %d times", i, n)
		}
	}
}

// TestWorkerDispatcherAfterClose: a run scheduled after Close still runs.
func TestWorkerDispatcherAfterClose(t *testing.T) {
	d := newWorkerDispatcher(1)
	d.Close()
	done := make(chan struct{})
	d.Schedule(func() { close(done) })
	<-done
}
