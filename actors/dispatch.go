package actors

// stackDispatcher runs each mailbox run on a new goroutine, like protoactor's default
// dispatcher, but grows the goroutine's stack once, at its start, to what an AccountActor's
// run needs (core, planner, broker call: tens of KiB). A new goroutine's stack starts
// small and doubles by copying: a CPU profile of the 1,000-follower fan-out spent 23 % of
// the process in runtime.newstack/copystack, three or four copies per run, each adjusting
// every frame of a deep stack. One growth at the start copies a stack of two frames.
type stackDispatcher int

// Schedule implements actor.Dispatcher.
func (stackDispatcher) Schedule(fn func()) {
	go func() {
		growStack(0)
		fn()
	}()
}

// Throughput implements actor.Dispatcher: messages a mailbox run handles before it yields.
func (d stackDispatcher) Throughput() int { return int(d) }

// stackPad is the frame growStack takes: the stack is grown to hold it in one step.
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
