package actors

import (
	"sync"
	"sync/atomic"
)

// workerDispatcher runs mailbox runs on goroutines that it keeps between runs. protoactor's
// default dispatcher starts a goroutine per mailbox run, and an AccountActor's run (core,
// planner, broker call) needs tens of KiB of stack: a new goroutine's stack starts small
// and doubles by copying every frame of a deep stack (23 % of the CPU of the
// 1,000-follower fan-out once), and growing it in one step at the start still zeroed a
// 24 KiB frame per run (6–8 %). A kept worker's stack is already grown.
//
// A run is never queued behind another: when no worker is waiting, Schedule starts a new
// one (a run may block on its broker call for as long as the call lasts). Up to maxIdle
// workers wait for the next run; the others end. Close ends the waiting workers and those
// still running once their run is done (Schedule after Close still runs fn, on a goroutine
// of its own).
type workerDispatcher struct {
	throughput int
	maxIdle    int32
	work       chan func() // unbuffered: a send succeeds only to a waiting worker
	done       chan struct{}
	closeOnce  sync.Once
	idle       atomic.Int32
}

// maxIdleWorkers bounds the workers kept waiting: a master event reaches up to a
// thousand followers' mailboxes at once (a burst that fewer kept workers cannot meet: with
// 16 per CPU a third of the 1,000-follower fan-out's runs found one, with 1,024 nineteen
// in twenty), and a waiting worker holds its stack (32 KiB at most, less once the
// collector shrinks it): 32 MiB at most.
const maxIdleWorkers = 1024

// newWorkerDispatcher's throughput is the messages a mailbox run handles before it
// yields.
func newWorkerDispatcher(throughput int) *workerDispatcher {
	return &workerDispatcher{throughput: throughput, maxIdle: maxIdleWorkers,
		work: make(chan func()), done: make(chan struct{})}
}

// Schedule implements actor.Dispatcher.
func (d *workerDispatcher) Schedule(fn func()) {
	select {
	case d.work <- fn:
	default:
		go d.worker(fn)
	}
}

// Throughput implements actor.Dispatcher.
func (d *workerDispatcher) Throughput() int { return d.throughput }

// Close ends the workers: those waiting at once, the others after their run.
func (d *workerDispatcher) Close() { d.closeOnce.Do(func() { close(d.done) }) }

func (d *workerDispatcher) worker(fn func()) {
	growStack(0)
	for {
		fn()
		if d.idle.Add(1) > d.maxIdle {
			d.idle.Add(-1)
			return
		}
		select {
		case fn = <-d.work:
			d.idle.Add(-1)
		case <-d.done:
			d.idle.Add(-1)
			return
		}
	}
}

// stackPad is the frame growStack takes: a worker's stack is grown to hold it in one step.
const stackPad = 24 << 10

// growStack's frame makes the runtime grow the stack to fit it; the index keeps the
// compiler from dropping the array.
//
//go:noinline
func growStack(i int) byte {
	var pad [stackPad]byte
	pad[i] = 1
	return pad[(i+1)%stackPad]
}
