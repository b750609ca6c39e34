#include "funcdata.h"

// func callClockGettime(fn uintptr, clock int32, ts *unix.Timespec) int32
//
// Calls fn, a C function of the System V ABI (the vDSO's clock_gettime), on this
// goroutine's stack. The 8 KiB frame is reserved for it: the call runs with SP at the top
// of that frame, so the C code (which knows nothing of Go's stack bounds; some kernels'
// vDSOs probe a page below their stack pointer) stays inside memory the prologue proved
// free. No Go code runs meanwhile, so the frame holds no pointers and nothing can move
// the stack. R12 is callee-saved in the C ABI and keeps Go's SP across the call.
TEXT ·callClockGettime(SB), 0, $8192-28
	NO_LOCAL_POINTERS
	MOVQ	fn+0(FP), AX
	MOVL	clock+8(FP), DI
	MOVQ	ts+16(FP), SI
	MOVQ	SP, R12
	LEAQ	8176(SP), BX
	ANDQ	$~15, BX
	MOVQ	BX, SP
	CALL	AX
	MOVQ	R12, SP
	MOVL	AX, ret+24(FP)
	RET
