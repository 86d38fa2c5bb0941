#include "textflag.h"

// func callerFP() uintptr
//
// callerFP returns the frame pointer of the Go function that calls it: BP is
// untouched because this function has no frame (NOFRAME, $0).
TEXT ·callerFP(SB), NOSPLIT|NOFRAME, $0-8
	MOVQ BP, ret+0(FP)
	RET
