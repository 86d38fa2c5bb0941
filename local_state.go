package offheap

import (
	"runtime"
	"sync"
	"sync/atomic"
	"weak"
)

// A Local's state: the type, its stacks, and the heap's registry of them
// (cacheSet), which the census, the sampler, the double-free check and
// Close read; the calls that use a Local live in local.go, and the
// registry's upkeep in local_set.go.

// A Local is a stock of free blocks that one goroutine holds for itself (a
// worker of a pool, a connection's loop): its Alloc and Free reach the stock
// without pinning to a P, without an atomic and without a cache line another
// goroutine writes, so a pair costs less than through the Heap. Use the Heap
// where goroutines are many and short-lived.
//
// A Local is not safe for concurrent use: one goroutine at a time uses it,
// as a bufio.Writer. Its Free takes any block of its heap, with Heap.Free's
// checks. It holds at most a magazine's depth of blocks per size class up to
// 32 KiB (4 MiB in all at the default depth), counted in Stats.LocalBytes;
// Trim cannot take them, Flush gives them back, and so does the garbage
// collector for a Local dropped without Close. A checked heap's Local passes
// every call to the heap.
type Local struct {
	h  *Heap
	st *cacheState // the stacks: off-heap, or noCache (forwarding or closed)

	fwd     bool            // a checked heap: every call goes to the heap
	closed  bool            // Close ran
	busy    atomic.Bool     // a forwarding Local: a call is in progress
	cleanup runtime.Cleanup // hands the blocks back if the Local is dropped unclosed
}

// cacheState is a Local's stacks and census, mapped off-heap, as a
// magazine is, so that Stats, InUse and the double-free check read the
// census and stacks that the owner writes with plain stores (the race
// detector does not see off-heap memory; an aligned load is never torn).
// The heap keeps every state it mapped (cacheSet) until its Close, and a
// closed Local's state, emptied, serves the next NewLocal, census and all:
// a state's counts only grow, so the census sums the states without ever
// moving a count from one place to another, and stays exact.
type cacheState struct{ stacks }

// noCache is the state of a Local that holds nothing: one that forwards
// every call, and one that is closed. Its stacks are empty and hold
// nothing, so the fast paths never write it and go to the slow ones.
var noCache cacheState

// cacheMax is the largest block a Local holds: the larger classes' blocks
// take microseconds to fill, beside which the heap's magazine costs
// nothing, and holding them would take the Local's bound past a few MiB.
const cacheMax = bigClassMin

// cacheSet is a heap's registry of Local states.
//
// The collector sees a Local's Go object (a few words), not its state or
// the blocks the state holds, so it feels no pressure from Locals dropped
// unclosed: a program that makes them faster than collections come would
// map a state, and keep a stock of blocks, for each. So the registry knows
// each open Local's state by the Local's weak pointer (owners), and when
// NewLocal finds no spare state and reclaimAt states in use, it runs a
// collection and takes back the states of the Locals it found unreachable
// (reclaimCaches) before it maps another. reclaimAt then doubles the states
// still in use, at least minReclaim, so that a program that keeps many
// Locals open pays a collection per doubling, as a growing heap does. A
// reclaimed Local's cleanup, which may run later, finds its state owned by
// another (or by none) and leaves it.
type cacheSet struct {
	mu        sync.Mutex
	all       []*cacheState                       // every state mapped: the census, the double-free check, Close
	spare     []*cacheState                       // states of closed Locals, emptied, for the next NewLocal
	owners    map[*cacheState]weak.Pointer[Local] // the states of open Locals (and of unreachable ones not yet reclaimed)
	reclaimAt int                                 // len(owners) from which getCache reclaims before it maps
	list      atomic.Pointer[[]*cacheState]       // all, for InUse without mu (only grows, as perP's)
	caps      [numClasses]uint32                  // a new state's stack caps, fixed at NewHeap
	closed    struct {                            // the census of every state, saved by the heap's Close
		hits  uint64
		class [numClasses]struct{ hits, frees uint64 }
	}
}

// cacheOwner is a Local's cleanup's argument: its state and its weak
// pointer, which says whether the state is still its own.
type cacheOwner struct {
	st *cacheState
	w  weak.Pointer[Local]
}
