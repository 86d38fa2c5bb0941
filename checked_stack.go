package offheap

import (
	"runtime"
	"slices"
	"strconv"
	"strings"
)

// Stacks in checked mode are captured on every Alloc and Free, so symbolizing
// must wait: a stack is a fixed array of return PCs, kept once in the stack
// depot and turned into text only when an error or a Lookup reports it.

// stackDepth is how many frames a stack keeps. The innermost is usually
// this package's own (Alloc or Free, whose slow path walks the stack);
// String drops such frames.
const stackDepth = 20

// stack is a captured call stack: n return PCs, innermost first.
type stack struct {
	n   int32
	pcs [stackDepth]uintptr
}

// frames is the captured PCs; a count out of range (a corrupted record)
// reads as none.
func (s *stack) frames() []uintptr {
	if uint32(s.n) > stackDepth {
		return nil
	}
	return s.pcs[:s.n]
}

// pkgPrefix is this package's import path plus ".", as function names spell
// it: "github.com/offheap/offheap.".
var pkgPrefix = func() string {
	pc, _, _, _ := runtime.Caller(0)
	name := runtime.FuncForPC(pc).Name() // github.com/offheap/offheap.init.func1
	return name[:strings.LastIndex(name, ".init")+1]
}()

// internalFrame reports whether fn, a function name, is part of the heap's
// own Alloc and Free machinery, which every stack starts with and no reader
// wants to see.
func internalFrame(fn string) bool {
	rest, ok := strings.CutPrefix(fn, pkgPrefix)
	if !ok {
		return strings.HasPrefix(fn, "runtime.") // panics that reach Free
	}
	if strings.HasPrefix(rest, "(*checker).") || strings.HasPrefix(rest, "(*Local).") || strings.HasPrefix(rest, "Shared.") || strings.HasPrefix(rest, "fpStack") {
		return true
	}
	switch strings.TrimPrefix(rest, "(*Heap).") {
	case "Alloc", "AllocUnzeroed", "TryAlloc", "allocSlow", "allocBig", "allocFast", "allocVia", "allocChecked", "Free", "freeSlow",
		"NewShared", "allocShared":
		return true
	}
	return false
}

// String formats the stack like a goroutine traceback: one line with the
// function, one indented line with file:line, for each frame below this
// package's Alloc or Free.
func (s *stack) String() string {
	// A copy: runtime.CallersFrames keeps its argument, which would make
	// every stack variable escape to the heap, even on paths that never
	// print one.
	pcs := slices.Clone(s.frames())
	if len(pcs) == 0 {
		return ""
	}
	var b strings.Builder
	frames := runtime.CallersFrames(pcs)
	leading := true
	for {
		f, more := frames.Next()
		if leading && internalFrame(f.Function) {
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
