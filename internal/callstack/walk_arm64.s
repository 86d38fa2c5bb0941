#include "textflag.h"

// func callerFP() uintptr
//
// callerFP returns the frame pointer (R29) of the Go function that calls it:
// this function has no frame (NOFRAME, $0), so R29 is untouched.
TEXT ·callerFP(SB), NOSPLIT|NOFRAME, $0-8
	MOVD R29, ret+0(FP)
	RET
