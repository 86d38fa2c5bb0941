//go:build race

package offheap

import (
	"runtime"
	"unsafe"
)

// Race-detector builds (go build -race, go test -race): the heap's memory is
// Go memory, so the race detector sees every access to a
// block as it sees any []byte. What it cannot see is the synchronization
// offheap does through structures that only pinning guards (the per-P
// magazines and quarantine rings, mapped off-heap) or that it keeps
// off-heap (the per-P counts of operations in progress, closing.go). Where
// a block, or the right to touch it, passes from one goroutine to another
// through one of those, the goroutine that gives it up calls raceRelease on
// the block's address after its last access, and the one that takes it
// calls raceAcquire before its first: the detector models the pair as a
// synchronizing store and load, which orders everything the first did
// before everything the second does. docs/DESIGN.md (Race builds) lists
// the edges.
//
// Both are nosplit, and so is everything they call in the runtime, down to
// the switch to the system stack: Free's fast path calls raceRelease and
// must have no safe point before its last access. They touch
// no memory of the program, only the detector's own.

const raceOn = true

// raceRelease is a release-merge on p: a later raceAcquire on p is ordered
// after this call and after every earlier raceRelease on p (it adds to what
// p carries, where a plain release would replace it). p is Go memory: a
// block, a *Heap, a Shared's data.
//
//go:nosplit
func raceRelease(p unsafe.Pointer) { runtime.RaceReleaseMerge(p) }

// raceAcquire orders the caller after every raceRelease on p so far.
//
//go:nosplit
func raceAcquire(p unsafe.Pointer) { runtime.RaceAcquire(p) }
