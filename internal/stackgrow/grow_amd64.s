#include "funcdata.h"

// func Grow()
//
// A frame of stackgrow.Size bytes that nothing writes: the prologue's stack check grows
// the stack to hold it, and the function returns. No pointers live in it and nothing is
// called, so the collector never reads it.
TEXT ·Grow(SB), 0, $12288-0	// stackgrow.Size
	NO_LOCAL_POINTERS
	RET
