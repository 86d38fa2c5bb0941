// Package callstack captures call stacks cheaply and keeps each distinct
// stack once: checked mode records two per block, and the allocation
// profile one per sample.
//
// A stack is a fixed array of return PCs, walked by frame pointers where
// the architecture allows (Walk), interned in a process-wide depot (Intern)
// and turned into text only when a report prints it (Format). It knows
// nothing of the heap that uses it: which frames a printed stack drops is
// the caller's to say.
package callstack

import (
	"runtime"
	"slices"
	"strconv"
	"strings"
)

// Depth is how many frames a stack keeps. The innermost are usually the
// caller's own (an allocator's Alloc or Free, whose slow path walks the
// stack); Format drops such frames.
const Depth = 20

// Stack is a captured call stack: N return PCs, innermost first.
type Stack struct {
	N   int32
	PCs [Depth]uintptr
}

// Frames is the captured PCs; a count out of range (a corrupted record)
// reads as none.
func (s *Stack) Frames() []uintptr {
	if uint32(s.N) > Depth {
		return nil
	}
	return s.PCs[:s.N]
}

// Fill completes s with what Walk, called by Fill's caller, found: n PCs,
// whose hash h it returns. Where frame pointers are not walked
// (FramePointers is false) it takes the same frames from runtime.Callers
// instead. The idiom, in the frame the stack starts above:
//
//	var s callstack.Stack
//	id := callstack.Intern(&s, s.Fill(callstack.Walk(&s.PCs)))
func (s *Stack) Fill(n int, h uint64) uint64 {
	if !FramePointers {
		return s.Callers(4) // Callers, Stack.Callers, Fill, its caller
	}
	s.N = int32(n)
	return h
}

// Callers fills s from runtime.Callers with the frames above skip
// (runtime.Callers itself and Callers are two; an inlined frame counts),
// and returns their hash.
func (s *Stack) Callers(skip int) uint64 {
	s.N = int32(runtime.Callers(skip, s.PCs[:]))
	return s.Hash()
}

// Hash is s's 64-bit hash, never 0: the one Walk computes as it goes.
func (s *Stack) Hash() uint64 {
	var h uint64
	for _, pc := range s.Frames() {
		h = hashPC(h, pc)
	}
	return hashEnd(h, len(s.Frames()))
}

// hashPC folds the next PC of a stack into its hash h.
func hashPC(h uint64, pc uintptr) uint64 { return (h ^ uint64(pc)) * 0xff51afd7ed558ccd }

// hashEnd finishes the hash h of a stack of n PCs: never 0.
func hashEnd(h uint64, n int) uint64 {
	h = (h ^ uint64(n)) * 0x9e3779b97f4a7c15
	return h ^ h>>32 | 1
}

// Format formats the stack like a goroutine traceback: one line with the
// function, one indented line with file:line, for each frame from the
// first that internal does not claim out to runtime.goexit. internal names
// the caller's own machinery (its Alloc and Free, say), which every stack
// starts with and no reader wants to see. This package's own frames are in
// no stack: Walk starts above its caller, and Fill's runtime.Callers skips
// them.
func (s *Stack) Format(internal func(fn string) bool) string {
	// A copy: runtime.CallersFrames keeps its argument, which would make
	// every Stack variable escape to the heap, even on paths that never
	// print one.
	pcs := slices.Clone(s.Frames())
	if len(pcs) == 0 {
		return ""
	}
	var b strings.Builder
	frames := runtime.CallersFrames(pcs)
	leading := true
	for {
		f, more := frames.Next()
		if leading && internal(f.Function) {
			if !more {
				break
			}
			continue
		}
		leading = false
		if f.Function == "runtime.goexit" {
			break
		}
		b.WriteString(f.Function)
		b.WriteString("\n\t")
		b.WriteString(f.File)
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(f.Line))
		b.WriteByte('\n')
		if !more {
			break
		}
	}
	return b.String()
}
