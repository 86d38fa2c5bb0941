//go:build amd64 || arm64

package callstack

// Frame-pointer unwinding, the cheap half of capturing a stack.
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
// Walk walks the chain. It fills pcs with the return addresses from its
// caller's out (its caller's own PC is not among them) and returns how many
// it found and their hash (Stack.Hash), computed as it goes: the hash's
// multiply chain runs beside the walk's chain of loads, where as a loop of
// its own it would be a third of the stacks' cost. A saved frame pointer that is
// not above the one before, or is more than 1 GiB above it, ends the walk.
//
// Reading the stack through raw addresses is safe because nothing can move
// it meanwhile: the walk calls nothing (so the stack cannot grow and be
// copied), and it only reads the calling goroutine's own stack.

// FramePointers reports that stacks are walked by their frame pointers
// (TestWalk compares the walk with runtime.Callers).
const FramePointers = true
