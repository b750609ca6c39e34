package boottime

import (
	"runtime"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// TestVDSOFoundOnAMD64: on linux/amd64 every kernel since 2.6 maps a vDSO with
// clock_gettime; not finding it would silently put a system call back on every order.
func TestVDSOFoundOnAMD64(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		if ViaVDSO() {
			t.Fatal("a vDSO call on an architecture without one")
		}
		return
	}
	if _, err := locate(); err != nil {
		t.Fatalf("vDSO clock_gettime not found: %v", err)
	}
	if !ViaVDSO() {
		t.Fatal("clock_gettime found but not used: its reading did not agree with the system call")
	}
	if err := Check(); err != nil {
		t.Fatal(err)
	}
}

// TestNanosIsCLOCK_BOOTTIME: every reading lies between two readings of CLOCK_BOOTTIME by
// the system call, from many goroutines at once (each on its own small stack: the vDSO
// call must stay in its reserved frame however deep the caller).
func TestNanosIsCLOCK_BOOTTIME(t *testing.T) {
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			deep(g, func() {
				for range 2000 {
					var before, after unix.Timespec
					if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &before); err != nil {
						errs <- err.Error()
						return
					}
					got := Nanos()
					_ = unix.ClockGettime(unix.CLOCK_BOOTTIME, &after)
					if got < before.Nano() || got > after.Nano() {
						errs <- "reading outside two CLOCK_BOOTTIME readings"
						return
					}
				}
			})
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
}

// deep calls f under depth extra frames, so readings are taken at different stack depths.
func deep(depth int, f func()) {
	var pad [64]byte
	if depth > 0 {
		deep(depth-1, f)
	} else {
		f()
	}
	runtime.KeepAlive(pad)
}

// TestSyscallFallback: the path taken where the vDSO is not found reads the same clock.
func TestSyscallFallback(t *testing.T) {
	var before, after unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &before); err != nil {
		t.Fatal(err)
	}
	got := syscallNanos()
	_ = unix.ClockGettime(unix.CLOCK_BOOTTIME, &after)
	if got < before.Nano() || got > after.Nano() {
		t.Fatalf("system call read %d, not between %d and %d", got, before.Nano(), after.Nano())
	}
}

func BenchmarkNanos(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_ = Nanos()
	}
}

func BenchmarkSyscall(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_ = syscallNanos()
	}
}
