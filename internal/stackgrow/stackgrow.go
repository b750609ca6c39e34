// Package stackgrow grows the calling goroutine's stack in one step, so that a deep call
// that follows does not grow it by doubling and copying three or four times on the way
// down (actors' mailbox runs).
package stackgrow

// Size is the stack Grow makes room for, in bytes: the runtime rounds the stack up to
// the next power of two that holds it (32 KiB).
const Size = 24 << 10
