package offheap

// An Arena's memory in its heap: where chunks come from and how Reset and
// Release give them back.
//
// # Reset, Release and checked mode
//
// Reset and Release must not run concurrently with Alloc (nor with each
// other); the caller's synchronization (a WaitGroup, a channel) orders them.
// Reset empties every P's sub-chunk and keeps the chunks as spares; Release
// gives every chunk and the per-P array back to the heap and clears
// a.procs, so a later Alloc misses the fast path and panics in the slow one.
// On a checked heap (Options.Checked), Reset gives every chunk back to the
// heap too instead of keeping it: the checked heap poisons and quarantines
// what it gets back (Heap.quarantineArena), so a use of arena memory
// after Reset is caught, where a private pool of chunks would blind the
// detector.
//
// # The arena's memory in the heap
//
// Chunks and the per-P array are page runs of the heap (allocLarge) whose
// pagemap words carry pageheap.ClassArena, whatever their size. So Heap.Free tells
// arena memory from a block at any address in it: the fast path takes only
// small-class pages, and the slow path refuses pageheap.ClassArena pages by name,
// in fast and checked mode alike. Were chunks ordinary blocks, Free of an
// arena's first allocation (a chunk's start) would free the chunk under
// the live arena and the heap would hand it out again.
//
// # The heap's Close
//
// Close takes an arena's per-P array out of service (Heap.arenasOutOfService,
// under mu, which installProcs takes to install one) before it quiesces:
// the fast path is nosplit from its load of a.procs to its unpin, so it
// cannot use an array Close has unmapped; the slow paths load a.procs
// pinned, and run between h.enter and h.exit.
// Every method on an arena of a closed heap then fails with an error that
// wraps ErrClosed, except a second Release and Stats after Release.

import (
	"cmp"
	"slices"
	"weak"

	"github.com/offheap/offheap/internal/callstack"
	"github.com/offheap/offheap/internal/pageheap"
)

// registerArena and forgetArena keep the set of arenas with a per-P array,
// for arenasOutOfService. The set holds them weakly: an arena the program
// dropped without Release cannot be called again.
func (h *Heap) registerArena(a *Arena) {
	h.arenaMu.Lock()
	if h.arenas == nil {
		h.arenas = make(map[weak.Pointer[Arena]]struct{})
	}
	h.arenas[weak.Make(a)] = struct{}{}
	h.arenaMu.Unlock()
}

func (h *Heap) forgetArena(a *Arena) {
	h.arenaMu.Lock()
	delete(h.arenas, weak.Make(a))
	h.arenaMu.Unlock()
}

// arenasOutOfService takes every arena's per-P array out of service, for
// Close (see the arena's design comment, The heap's Close). Called after
// the heap is marked closed, so that installProcs installs no other.
func (h *Heap) arenasOutOfService() {
	h.arenaMu.Lock()
	var as []*Arena
	for w := range h.arenas {
		if a := w.Value(); a != nil {
			as = append(as, a)
		}
	}
	h.arenas = nil
	h.arenaMu.Unlock()
	for _, a := range as {
		a.mu.Lock()
		a.procs.Store(nil)
		a.mu.Unlock()
	}
}

// mem and free reach the arena's memory: the heap's page runs marked
// pageheap.ClassArena.
func (a *Arena) mem(n int, zero bool) ([]byte, error) { return a.h.arenaRun(n, zero) }

func (a *Arena) free(b []byte) { a.h.freeArenaRun(addrOf(b)) }

// arenaRun takes a run of pages for n bytes of an arena, marked pageheap.ClassArena.
// Called between enter and exit.
func (h *Heap) arenaRun(n int, zero bool) ([]byte, error) {
	p, err := h.allocLarge(n, zero, pageheap.ClassArena)
	if err != nil && h.flushedAtLimit(err) {
		p, err = h.allocLarge(n, zero, pageheap.ClassArena)
	}
	if err != nil {
		return nil, err
	}
	if prof := h.prof; prof != nil && prof.draw(n) {
		var s stack
		h.sampleArenaRun(p, n, callstack.Intern(&s, s.Fill(callstack.Walk(&s.PCs))))
	}
	return bytesAt(p, n), nil
}

// freeArenaRun gives back an arena's run at p: to the page heap, or on a
// checked heap to its quarantine, which poisons it and gives it back when it
// leaves. Called between enter and exit.
func (h *Heap) freeArenaRun(p uintptr) {
	if h.checked() {
		h.quarantineArena(p)
		return
	}
	h.releaseArenaRun(p) // out of the profile first, as freeSampled
	h.freeLarge(p, pageheap.ClassArena)
}

// Reset forgets every allocation, keeping the arena's chunks for the next
// Alloc (a checked heap gives them back, so that its poisoning catches a use
// after Reset). The arena's memory must not be used again. It panics after
// Release and after the heap's Close.
func (a *Arena) Reset() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.released.Load() {
		panic(arenaReleasedError{"Reset"})
	}
	if !a.h.enter() {
		panic(arenaClosedError("Reset"))
	}
	defer a.h.exit()
	a.endRound()
	a.dropSubChunks()
	if a.h.checked() {
		// Checked mode: no pool that would blind the detector.
		a.freeChunks()
		return
	}
	for _, c := range a.chunks {
		c.off.Store(0)
		c.waste.Store(0)
	}
	used := make([][]*arenaChunk, len(a.lanes))
	for _, c := range a.chunks {
		if c.own {
			a.spareOwn = append(a.spareOwn, c)
		} else {
			used[c.lane] = append(used[c.lane], c)
		}
	}
	for i, u := range used {
		a.spareGen[i] = append(u, a.spareGen[i]...) // the ones this round used come first
	}
	clear(a.chunks)
	a.chunks = a.chunks[:0]
	slices.SortStableFunc(a.spareOwn, func(x, y *arenaChunk) int {
		return cmp.Compare(y.size, x.size) // largest first
	})
}

// Release gives every chunk back to the heap. The arena's memory must not be
// used again, and a later Alloc, TryAlloc or Reset fails with ErrClosed. A
// second Release does nothing. Release arenas before closing their heap:
// after the heap's Close, Release panics with an error wrapping ErrClosed.
func (a *Arena) Release() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.released.Swap(true) {
		return
	}
	a.h.forgetArena(a)
	if !a.h.enter() {
		a.procs.Store(nil)
		a.chunks, a.spareGen, a.spareOwn, a.procMem, a.held = nil, nil, nil, nil, 0
		panic(arenaClosedError("Release"))
	}
	defer a.h.exit()
	a.endRound()
	a.dropSubChunks()
	a.procs.Store(nil) // the fast path now always misses
	a.freeChunks()
	if a.procMem != nil {
		a.free(a.procMem)
		a.procMem = nil
	}
}

// endRound folds the round's AllocBytes into the peak, before Reset or
// Release forgets the round. Called with mu held and no Alloc running.
func (a *Arena) endRound() {
	alloc, _ := a.allocBytes()
	a.peak = max(a.peak, alloc)
}

// dropSubChunks empties every P's sub-chunk and the current chunk. Called
// with mu held and no Alloc running.
func (a *Arena) dropSubChunks() {
	for i := range a.lanes {
		a.lanes[i].cur.Store(nil)
	}
	if ps := a.procs.Load(); ps != nil {
		for i := range ps.n {
			ps.p[i].next, ps.p[i].end, ps.p[i].waste = 0, 0, 0
		}
	}
}

// freeChunks gives every chunk back to the source. Called with mu held.
func (a *Arena) freeChunks() {
	for _, c := range a.chunks {
		a.free(bytesAt(c.base, int(c.size)))
	}
	for i, s := range a.spareGen {
		for _, c := range s {
			a.free(bytesAt(c.base, int(c.size)))
		}
		a.spareGen[i] = nil
	}
	for _, c := range a.spareOwn {
		a.free(bytesAt(c.base, int(c.size)))
	}
	a.chunks, a.spareOwn, a.held = nil, nil, 0
}
