//go:build amd64 || arm64

package offheap

import "unsafe"

// Frame-pointer unwinding, the cheap half of checked mode's stacks.
//
// On amd64 and arm64 every Go function that has a frame saves its caller's
// frame pointer at [FP] and the return address sits at [FP+8], so the chain
// of saved frame pointers walks the goroutine's stack from the innermost frame
// out; the outermost frame (runtime.goexit) saved 0. This is what the
// runtime's execution tracer does (runtime.fpTracebackPCs): a few
// nanoseconds for 20 frames where runtime.Callers, which decodes the unwind
// tables, takes about 200. The PCs are return addresses, which is what
// runtime.CallersFrames expects; it also expands the frames that were inlined
// at each of them.
//
// Reading the stack through raw addresses is safe here because nothing can
// move it meanwhile: the walk calls nothing (so the stack cannot grow and be
// copied), and it only reads the calling goroutine's own stack.

// framePointers reports that captureStack walks frame pointers; the tests
// turn it off to compare with runtime.Callers.
var framePointers = true

// callerFP returns the frame pointer of its caller (checked_fp_*.s).
func callerFP() uintptr

// fpStack fills pcs with the return addresses of the frames above its caller
// and returns how many it found. nosplit: no stack growth (and so no stack
// copy) between reading the frame pointer and the end of the walk. norace and
// nocheckptr: the loads are of the goroutine's own stack, which the race
// detector and checkptr would otherwise instrument as if they were heap
// accesses.
//
//go:nosplit
//go:norace
//go:nocheckptr
func fpStack(pcs *[stackDepth]uintptr) int {
	fp := callerFP()
	n := 0
	for n < len(pcs) && fp != 0 {
		// The loads are spelled out rather than calling word (unsafe.go):
		// a call that is not inlined (go test -gcflags=-l) could grow the
		// stack and leave fp pointing into the old copy.
		ra, saved := fp+8, fp
		pcs[n] = **(**uintptr)(unsafe.Pointer(&ra))
		n++
		next := **(**uintptr)(unsafe.Pointer(&saved))
		// Callers' frames are at higher addresses; anything else is the end
		// of the chain (or a chain we do not trust).
		if next <= fp || next-fp > 1<<30 {
			break
		}
		fp = next
	}
	return n
}
