package offheap

import (
	"runtime"
	"strings"

	"github.com/offheap/offheap/internal/callstack"
)

// The stacks checked mode records and the profile samples carry are
// internal/callstack's: walked by frame pointers from the slow path's own
// frame, kept once in its depot, and turned into text only when a report
// prints one. What is this package's is which frames a printed stack
// drops: the heap's own, which every stack starts with.

// stack is a captured call stack (the idiom: var s stack; id :=
// callstack.Intern(&s, s.Fill(callstack.Walk(&s.PCs))), in the frame the
// stack starts above), and stackID its name in the depot, which a record
// and a sample keep.
type (
	stack   = callstack.Stack
	stackID = callstack.ID
)

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
	if strings.HasPrefix(rest, "(*checker).") || strings.HasPrefix(rest, "(*Local).") || strings.HasPrefix(rest, "Shared.") {
		return true
	}
	switch strings.TrimPrefix(rest, "(*Heap).") {
	case "Alloc", "AllocUnzeroed", "TryAlloc", "allocSlow", "allocBig", "allocFast", "allocVia", "Free", "freeSlow",
		"NewShared", "allocShared":
		return true
	}
	return false
}

// stackText is the stack id names, printed below the heap's own frames;
// "" for no stack.
func stackText(id stackID) string { return id.Format(internalFrame) }
