package offheap

// Arena allocation: the fast path (a bump of the P's sub-chunk, arena.go's
// layer 1) and the slow path, which refills sub-chunks from the lanes'
// chunks and takes new chunks (layers 2 and 3).

import (
	"fmt"
	"runtime"
	"slices"

	"github.com/offheap/offheap/internal/pageheap"
	"github.com/offheap/offheap/internal/pin"
)

// Alloc returns n zeroed bytes with len and cap n, 16-byte aligned (Alloc(0)
// an empty, non-nil slice), safe for concurrent use. It panics if n is
// negative, the heap cannot supply a chunk, or the arena was released;
// TryAlloc returns the error instead.
//
//go:nosplit
//go:norace
func (a *Arena) Alloc(n int) []byte {
	// allocFast, with Alloc's own return: with the two calls to pin it
	// cannot inline, and a second call level costs a measurable nanosecond
	// (BenchmarkArenaAlloc). The bump is bump's, inlined.
	if ps := a.procs.Load(); ps != nil && n > 0 {
		pid := pin.Pin()
		x := ps.bump(pid, uintptr(n+arenaAlign-1)&^(arenaAlign-1)) // a huge n wraps to a huge size
		pin.Unpin()
		if x != 0 {
			return bytesAt(x, n)
		}
	}
	return a.allocSlow(n)
}

// TryAlloc is Alloc returning the error instead of panicking: errors.Is(err,
// ErrLimit), ErrAddressSpace or ErrClosed when the heap cannot supply a
// chunk, ErrSize for a negative or impossible n, ErrClosed after Release.
func (a *Arena) TryAlloc(n int) ([]byte, error) {
	if x := a.allocFast(n); x != 0 {
		return bytesAt(x, n), nil
	}
	return a.alloc(n, true)
}

// AllocUnzeroed is Alloc without the zeroing, for callers that overwrite
// every byte: an allocation above 512 bytes holds whatever the arena's
// memory last held; smaller ones come zeroed, from sub-chunks cleared once
// per claim. It panics as Alloc does.
func (a *Arena) AllocUnzeroed(n int) []byte {
	if x := a.allocFast(n); x != 0 {
		return bytesAt(x, n)
	}
	b, err := a.alloc(n, false)
	if err != nil {
		panic(err)
	}
	return b
}

// allocFast bumps the current P's sub-chunk, or returns 0. This is the whole
// fast path: one atomic load that is a plain load, the pin, a compare, a
// store, the unpin. It and Alloc are nosplit: no safe point from the load
// of procs to the unpin, so that Close, which takes procs out of service and
// then quiesces, cannot unmap the array under them: Close waits out pinned calls.
//
//go:nosplit
func (a *Arena) allocFast(n int) uintptr {
	if ps := a.procs.Load(); ps != nil && n > 0 {
		pid := pin.Pin()
		x := ps.bump(pid, uintptr(n+arenaAlign-1)&^(arenaAlign-1)) // a huge n wraps to a huge size
		pin.Unpin()
		return x
	}
	return 0
}

// bump hands out sz bytes of P pid's sub-chunk, or returns 0 when the P
// has no state or its sub-chunk is shorter. The caller is pinned to pid. It
// inlines into Alloc and allocFast (except in race builds, which inline no
// function exempt from the detector).
//
//go:norace
func (ps *arenaProcs) bump(pid int, sz uintptr) uintptr {
	if uint(pid) < uint(ps.n) {
		p := &ps.p[uint(pid)%maxProcs] // pid < n <= maxProcs: the modulo only drops the bounds check
		if x := p.next; p.end-x >= sz {
			p.next = x + sz
			return x
		}
	}
	return 0
}

// allocSlow is Alloc's slow path, out of line to keep Alloc's frame small.
func (a *Arena) allocSlow(n int) []byte {
	b, err := a.alloc(n, true)
	if err != nil {
		panic(err)
	}
	return b
}

// alloc serves every request the fast path did not, between the heap's
// enter and exit; zero says whether a request above
// arenaFastMax must be cleared.
func (a *Arena) alloc(n int, zero bool) ([]byte, error) {
	if a.h == nil {
		return nil, errZeroArena
	}
	if a.released.Load() {
		return nil, arenaReleasedError{"Alloc"}
	}
	if !a.h.enter() {
		return nil, arenaClosedError("Alloc")
	}
	defer a.h.exit()
	switch {
	case n < 0:
		return nil, fmt.Errorf("%w: negative size %d", ErrSize, n)
	case n == 0:
		return []byte{}, nil
	case uint64(n) > maxAlloc:
		return nil, fmt.Errorf("%w: %d bytes is more than an arena can hold", ErrSize, n)
	}
	sz := pageheap.AlignUp(uintptr(n), arenaAlign)
	var x uintptr
	var err error
	switch {
	case sz >= a.bigMin:
		x, err = a.allocOwn(sz, n, zero)
	case sz <= arenaFastMax:
		x, err = a.allocSub(sz)
	default:
		x, err = a.allocShared(sz, n, zero)
	}
	if err != nil {
		return nil, pageheap.Requested(err, n)
	}
	return bytesAt(x, n), nil
}

// allocSub serves a small request by refilling the current P's sub-chunk.
//
//go:norace
func (a *Arena) allocSub(sz uintptr) (uintptr, error) {
	if a.procs.Load() == nil && a.installProcs() == nil {
		return a.allocShared(sz, int(sz), true)
	}
	pid := pin.Pin()
	ps := a.procs.Load() // pinned: Close may take it out of service
	if ps == nil || uint(pid) >= uint(ps.n) {
		pin.Unpin()
		return a.allocShared(sz, int(sz), true)
	}
	// Another goroutine on this P may have refilled it since the fast path
	// looked, or the fast path ran before procs existed.
	if p := &ps.p[pid]; p.end-p.next >= sz {
		x := p.next
		p.next = x + sz
		pin.Unpin()
		return x, nil
	}
	pin.Unpin()

	lo, hi, c, err := a.claim(pid%len(a.lanes), arenaSub, sz)
	if err != nil {
		return 0, err
	}
	clear(bytesAt(lo, int(hi-lo)))
	x := lo
	lo += sz
	drop := hi - lo
	pid = pin.Pin() // perhaps another P: install there
	if ps := a.procs.Load(); ps != nil && uint(pid) < uint(ps.n) {
		p := &ps.p[pid]
		if hi-lo > p.end-p.next {
			drop = p.end - p.next
			p.next, p.end = lo, hi
		}
		// An atomic add on the chunk's waste would write the line every
		// refill contends on; the P's own word costs nothing.
		p.waste += drop
		drop = 0
	}
	pin.Unpin()
	if drop != 0 {
		c.waste.Add(drop)
	}
	return x, nil
}

// allocShared claims exactly sz bytes from the calling P's lane for a request of
// n bytes, and clears them if zero.
func (a *Arena) allocShared(sz uintptr, n int, zero bool) (uintptr, error) {
	lo, _, _, err := a.claim(a.lane(), sz, sz)
	if err != nil {
		return 0, err
	}
	if zero {
		clear(bytesAt(lo, n))
	}
	return lo, nil
}

// claim takes want bytes from lane's chunk with one atomic add, or fewer
// (at least need) when the claim straddles the chunk's end. It returns the
// claimed range and its chunk; the caller owns it alone.
func (a *Arena) claim(lane int, want, need uintptr) (lo, hi uintptr, c *arenaChunk, err error) {
	for {
		c = a.lanes[lane].cur.Load()
		if c != nil {
			o := c.off.Add(want) - want
			if o < c.size {
				end := min(o+want, c.size)
				if end-o >= need {
					return c.base + o, c.base + end, c, nil
				}
				c.waste.Add(end - o) // a tail too short for this request
			}
		}
		if err := a.growFrom(lane, c); err != nil {
			return 0, 0, nil, err
		}
	}
}

// growFrom replaces the exhausted current chunk old with a new one, unless
// another goroutine already has.
func (a *Arena) growFrom(lane int, old *arenaChunk) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.released.Load() {
		return arenaReleasedError{"Alloc"}
	}
	l := &a.lanes[lane]
	if l.cur.Load() != old {
		return nil
	}
	var c *arenaChunk
	// The lane's own spares first, in the order of the last round, so that
	// the same work takes the same chunks again; then any lane's.
	for i := range a.spareGen {
		k := (lane + i) % len(a.spareGen)
		if s := a.spareGen[k]; len(s) > 0 {
			c = s[0]
			a.spareGen[k] = s[1:]
			break
		}
	}
	if c == nil {
		size := a.chunk
		if a.grow {
			size = min(max(size, pageheap.AlignUp(a.held, pageSize)), max(size, arenaChunkMax))
		}
		var err error
		if c, err = a.newChunk(size, false); err != nil { // cleared as claimed
			return err
		}
	}
	c.lane = lane
	a.chunks = append(a.chunks, c)
	l.cur.Store(c)
	return nil
}

// allocOwn serves a request of at least bigMin bytes with a chunk of its
// own: the smallest spare that fits, or a new chunk from the heap; zeroed
// if zero.
func (a *Arena) allocOwn(sz uintptr, n int, zero bool) (uintptr, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.released.Load() {
		return 0, arenaReleasedError{"Alloc"}
	}
	var c *arenaChunk
	// spareOwn is sorted largest first: the chunks of at least sz bytes are
	// a prefix, and the last of them is the smallest that fits. General
	// spares are left to general refills, so a repeated round takes no new
	// chunk.
	if k, _ := slices.BinarySearchFunc(a.spareOwn, sz, fitsFirst); k > 0 {
		c = a.spareOwn[k-1]
		a.spareOwn = slices.Delete(a.spareOwn, k-1, k)
		if zero {
			clear(bytesAt(c.base, n))
		}
	} else {
		var err error
		// Zeroed by the heap, which clears only the pages that were dirty.
		if c, err = a.newChunk(pageheap.AlignUp(sz, pageSize), zero); err != nil {
			return 0, err
		}
	}
	c.own = true
	c.off.Store(c.size)
	c.waste.Store(c.size - sz)
	a.chunks = append(a.chunks, c)
	return c.base, nil
}

// fitsFirst orders a chunk that holds sz bytes before one that does not.
func fitsFirst(c *arenaChunk, sz uintptr) int {
	if c.size >= sz {
		return -1
	}
	return 1
}

// newChunk takes a chunk of size bytes from the source. Called with mu held.
func (a *Arena) newChunk(size uintptr, zero bool) (*arenaChunk, error) {
	b, err := a.mem(int(size), zero)
	if err != nil {
		return nil, err
	}
	a.held += size
	return &arenaChunk{base: addrOf(b), size: size}, nil
}

// chunkBytes is the size of the block the heap would hand out for a request
// of sz bytes (Buffer sizes its blocks so). An arena's chunk of its own is a
// page run whatever its size (see The arena's memory in the heap):
// alignUp(sz, pageSize).
func chunkBytes(sz uintptr) uintptr {
	if sz <= maxSmall {
		return uintptr(classSize[sizeClass(int(sz))])
	}
	return pageheap.AlignUp(sz, pageSize)
}

// installProcs gives the arena its per-P array, sized for GOMAXPROCS now, or
// returns nil if the heap has no room (the arena then claims from its lanes
// alone, and tries again on the next refill).
func (a *Arena) installProcs() *arenaProcs {
	a.mu.Lock()
	defer a.mu.Unlock()
	if ps := a.procs.Load(); ps != nil || a.released.Load() || a.h.closed.Load() {
		return ps // on a closed heap nothing is installed: Close took it out of service under mu
	}
	np := min(runtime.GOMAXPROCS(0), maxProcs)
	b, err := a.mem((np+2)*arenaLine, true) // the header, the states, and room to align
	if err != nil {
		return nil
	}
	ps := (*arenaProcs)(ptr(pageheap.AlignUp(addrOf(b), arenaLine)))
	ps.n = uintptr(np)
	a.procMem = b
	a.h.registerArena(a)
	a.procs.Store(ps)
	return ps
}
