package boottime

import (
	"bufio"
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// vdsoClockGettime is the address of the vDSO's clock_gettime, 0 when it was not found
// (Nanos then uses the system call). Set once, before main.
var vdsoClockGettime = findClockGettime()

// callClockGettime calls the C function fn(clock, ts) (vdso_amd64.s) on this goroutine's
// stack, in a frame reserved for it, and returns its result (0, or -errno).
//
//go:noescape
func callClockGettime(fn uintptr, clock int32, ts *unix.Timespec) int32

// atSysinfoEHDR is the auxiliary vector's key for the vDSO's ELF header (elf.h).
const atSysinfoEHDR = 33

// vdsoRead reads CLOCK_BOOTTIME into ts through the vDSO and returns the errno (0: read).
func vdsoRead(ts *unix.Timespec) int32 {
	return -callClockGettime(vdsoClockGettime, unix.CLOCK_BOOTTIME, ts)
}

// findClockGettime locates __vdso_clock_gettime in the vDSO the kernel mapped into this
// process (the ELF image at AT_SYSINFO_EHDR), reading only inside that mapping, and
// proves it on one reading against the system call. Any doubt returns 0.
func findClockGettime() uintptr {
	fn, err := locate()
	if err != nil || fn == 0 {
		return 0
	}
	var ts unix.Timespec
	before := syscallNanos()
	if callClockGettime(fn, unix.CLOCK_BOOTTIME, &ts) != 0 {
		return 0
	}
	if got := ts.Nano(); got < before || got > syscallNanos() {
		return 0
	}
	return fn
}

func locate() (uintptr, error) {
	aux, err := unix.Auxv()
	if err != nil {
		return 0, err
	}
	var base uintptr
	for _, kv := range aux {
		if kv[0] == atSysinfoEHDR {
			base = kv[1]
		}
	}
	if base == 0 {
		return 0, fmt.Errorf("no vDSO in the auxiliary vector")
	}
	size, err := mappingSize(base)
	if err != nil {
		return 0, err
	}
	// The image is the kernel's mapping, not Go memory: its address is a plain number, read
	// as a pointer without the uintptr conversion vet (rightly, for Go memory) flags.
	image := unsafe.Slice((*byte)(*(*unsafe.Pointer)(unsafe.Pointer(&base))), size)
	f, err := elf.NewFile(bytes.NewReader(image))
	if err != nil {
		return 0, err
	}
	var load uint64
	found := false
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD {
			load, found = p.Vaddr-p.Off, true
			break
		}
	}
	if !found {
		return 0, fmt.Errorf("vDSO has no loadable segment")
	}
	syms, err := f.DynamicSymbols()
	if err != nil {
		return 0, err
	}
	for _, s := range syms {
		if s.Name == "__vdso_clock_gettime" && elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Section != elf.SHN_UNDEF {
			if s.Value < load || s.Value-load >= uint64(size) {
				return 0, fmt.Errorf("vDSO clock_gettime outside its image")
			}
			return base + uintptr(s.Value-load), nil
		}
	}
	return 0, fmt.Errorf("vDSO has no __vdso_clock_gettime")
}

// mappingSize is the length of the mapping that starts at base, from /proc/self/maps.
func mappingSize(base uintptr) (int, error) {
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		span, _, _ := strings.Cut(sc.Text(), " ")
		lo, hi, ok := strings.Cut(span, "-")
		if !ok {
			continue
		}
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 == nil && err2 == nil && uintptr(start) == base && end > start {
			return int(end - start), nil
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("vDSO mapping at %#x not in /proc/self/maps", base)
}
