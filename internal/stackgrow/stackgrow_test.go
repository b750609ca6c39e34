package stackgrow

import (
	"testing"
	"unsafe"
)

// deepUse needs about n KiB of stack below the caller.
//
//go:noinline
func deepUse(n int) byte {
	var b [1024]byte
	b[n%1024] = byte(n)
	if n == 0 {
		return b[0]
	}
	return deepUse(n-1) + b[(n+1)%1024]
}

// TestGrowSparesLaterGrowth: after Grow, a goroutine descends 10 KiB without another
// stack growth. A growth copies the stack to new memory, so the address of a local of the
// goroutine's first frame changes exactly when the stack grew.
func TestGrowSparesLaterGrowth(t *testing.T) {
	moved := func(grow bool) bool {
		done := make(chan bool)
		go func() {
			if grow {
				Grow()
			}
			var top byte
			before := addr(&top)
			deepUse(10)
			done <- addr(&top) != before
		}()
		return <-done
	}
	if !moved(false) {
		t.Fatal("without Grow, 10 KiB of depth did not move a new goroutine's stack: the test proves nothing")
	}
	if moved(true) {
		t.Fatal("after Grow, 10 KiB of depth still moved the stack")
	}
}

//go:noinline
func addr(p *byte) uintptr { return uintptr(unsafe.Pointer(p)) }
