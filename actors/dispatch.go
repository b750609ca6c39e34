package actors

import (
	"github.com/asynkron/protoactor-go/actor"

	"github.com/snapcopier/copier/internal/stackgrow"
)

// stackDispatcher runs each mailbox run on a new goroutine, like protoactor's default
// dispatcher, but grows the goroutine's stack once, at its start, to what an AccountActor's
// run needs (core, planner, broker call: 16 KiB, the largest size the runtime caches). A new goroutine's stack starts
// small and doubles by copying: a CPU profile of the 1,000-follower fan-out spent 23 % of
// the process in runtime.newstack/copystack, three or four copies per run, each adjusting
// every frame of a deep stack. One growth at the start copies a stack of two frames (and,
// on amd64, zeroes nothing: internal/stackgrow).
type stackDispatcher int

// mailboxDispatcher is what the AccountActors and the StatusWriter run on: 300 messages a
// run before the mailbox yields its goroutine.
func mailboxDispatcher() actor.Dispatcher { return stackDispatcher(300) }

// Schedule implements actor.Dispatcher.
func (stackDispatcher) Schedule(fn func()) {
	go func() {
		stackgrow.Grow()
		fn()
	}()
}

// Throughput implements actor.Dispatcher: messages a mailbox run handles before it yields.
func (d stackDispatcher) Throughput() int { return int(d) }
