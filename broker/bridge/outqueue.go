package bridge

import "sync"

// queued is one encoded frame waiting for a connection's writer. call is set on the
// client for request frames, so the writer can tell a request that was sent from one
// whose caller gave up before it left.
type queued struct {
	data []byte
	call *call
}

// outQueue is a FIFO of encoded frames with a wake-up signal for the connection's writer.
// Pushing never blocks, so a reader or a handler never waits for the network. It needs
// no bound of its own: at most one frame per in-flight request (a bounded number) plus
// a few control frames can be in it.
type outQueue struct {
	mu     sync.Mutex
	frames []queued
	ready  chan struct{} // capacity 1: "there is something to write"
}

func newOutQueue() *outQueue {
	return &outQueue{ready: make(chan struct{}, 1)}
}

func (q *outQueue) push(item queued) {
	q.mu.Lock()
	q.frames = append(q.frames, item)
	q.mu.Unlock()
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// len returns the number of frames waiting.
func (q *outQueue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.frames)
}

// take returns everything queued and keeps spare (emptied) as the next backing array.
func (q *outQueue) take(spare []queued) []queued {
	clear(spare)
	q.mu.Lock()
	out := q.frames
	q.frames = spare[:0]
	q.mu.Unlock()
	return out
}
