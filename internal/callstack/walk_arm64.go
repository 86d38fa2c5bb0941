package callstack

import "unsafe"

// callerFP returns the frame pointer of its caller.
func callerFP() uintptr

// Walk walks frame pointers. nosplit: no stack growth
// (and so no stack copy) between reading the frame pointer and the end of
// the walk. norace and nocheckptr: the loads are of the goroutine's own
// stack, which the race detector and checkptr would otherwise instrument as
// if they were heap accesses.
//
//go:nosplit
//go:norace
//go:nocheckptr
func Walk(pcs *[Depth]uintptr) (n int, h uint64) {
	fp := callerFP() // Walk's own frame: its caller's PC is at fp+8
	for first := true; fp != 0; first = false {
		// The loads are spelled out rather than calling word:
		// a call that is not inlined (go test -gcflags=-l) could grow the
		// stack and leave fp pointing into the old copy.
		ra, saved := fp+8, fp
		if !first { // the first is Walk's own
			if n == len(pcs) {
				break
			}
			pc := **(**uintptr)(unsafe.Pointer(&ra))
			pcs[n] = pc
			h = hashPC(h, pc)
			n++
		}
		next := **(**uintptr)(unsafe.Pointer(&saved))
		// Callers' frames are at higher addresses; anything else is the end
		// of the chain (or a chain we do not trust).
		if next <= fp || next-fp > 1<<30 {
			break
		}
		fp = next
	}
	return n, hashEnd(h, n)
}
