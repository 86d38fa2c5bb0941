#include "textflag.h"

// func Walk(pcs *[Depth]uintptr) (n int, h uint64)
//
// See walk.go. NOFRAME: BP is still the caller's frame pointer, so
// the first return address read, at 8(BP), is where the caller returns to.
// The hash is the one Stack.Hash computes (hashPC, hashEnd).
TEXT ·Walk(SB), NOSPLIT|NOFRAME, $0-24
	MOVQ pcs+0(FP), DI
	MOVQ BP, AX                 // frame
	XORQ CX, CX                 // n
	XORQ DX, DX                 // h
	MOVQ $0xff51afd7ed558ccd, R8
loop:
	CMPQ CX, $20                // Depth
	JGE  done
	TESTQ AX, AX
	JZ   done
	MOVQ 8(AX), SI              // return address
	MOVQ SI, (DI)(CX*8)
	XORQ SI, DX                 // h = (h ^ pc) * k
	IMULQ R8, DX
	INCQ CX
	MOVQ (AX), R9               // the caller's frame
	CMPQ R9, AX
	JLS  done                   // not above this one: the end
	MOVQ R9, R10
	SUBQ AX, R10
	CMPQ R10, $0x40000000
	JHI  done                   // more than 1 GiB above: not trusted
	MOVQ R9, AX
	JMP  loop
done:
	XORQ CX, DX                 // hashEnd: h = (h ^ n) * k; h ^ h>>32 | 1
	MOVQ $0x9e3779b97f4a7c15, R8
	IMULQ R8, DX
	MOVQ DX, R9
	SHRQ $32, R9
	XORQ R9, DX
	ORQ  $1, DX
	MOVQ CX, n+8(FP)
	MOVQ DX, h+16(FP)
	RET
