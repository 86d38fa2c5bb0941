package offheap

import (
	"runtime"
	"sync/atomic"
)

// A Local's state: the type and its stacks, which the per-heap set of
// Locals (local_set.go), the census and the sampler read; the calls that
// use a Local live in local.go.

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
