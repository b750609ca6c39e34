// Package stackgrow grows the calling goroutine's stack in one step, so that a deep call
// that follows does not grow it by doubling and copying three or four times on the way
// down (actors' mailbox runs, the bridge server's request handlers).
package stackgrow

// Size is the stack Grow makes room for, in bytes: the runtime rounds the stack up to
// the next power of two that holds it, 16 KiB. That is the largest stack the runtime
// keeps in its per-processor caches: a 32 KiB stack is allocated and freed under the
// heap's lock, and every mailbox run allocates one and frees it when its goroutine ends
// (a profile of 10,000 followers spent 9 % of the process there). An AccountActor's run
// fits in 16 KiB; a deeper one grows again, as any goroutine does.
const Size = 12 << 10
