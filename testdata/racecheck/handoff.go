package main

// The correct scenarios: a block handed from goroutine to goroutine only
// through offheap, which the race detector must see as ordered.

import (
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/offheap/offheap"
)

// handoff: a block freed on one goroutine is allocated again on another,
// after the Free (steps): only offheap's Free and Alloc order
// the first owner's writes before the second's. One P, so that the second
// owner gets the very block (checked).
//
// With far, 16 MiB of live large blocks come first, so that the blocks are
// in a later region than the first, whose Frees take the slow path.
func handoff(far bool) {
	runtime.GOMAXPROCS(1)
	h := newHeap(offheap.Options{})
	if far {
		for range 16 {
			h.Alloc(1 << 20)
		}
	}
	sizes := []int{16, 64, 100, 1000, 5000, 40 << 10, 200 << 10}
	for round := range 4 * len(sizes) {
		n := sizes[round%len(sizes)]
		unzeroed := round/len(sizes)%2 == 1
		var first, second uintptr
		steps(func() { first = useOnce(h, n) }, func() { second = handoffSecond(h, n, unzeroed) })
		if first != second {
			fail("round %d (%d bytes): the second owner got %#x, not the first's %#x", round, n, second, first)
		}
	}
}

// useOnce allocates n bytes, writes them, frees them and returns where
// they were.
//
//go:noinline
func useOnce(h *offheap.Heap, n int) uintptr {
	b := h.Alloc(n)
	fill(b)
	check(b)
	h.Free(b)
	return addr(b)
}

//go:noinline
func handoffSecond(h *offheap.Heap, n int, unzeroed bool) uintptr {
	var b []byte
	if unzeroed {
		b = h.AllocUnzeroed(n)
	} else {
		b = h.Alloc(n)
		zeroed(b, fmt.Sprintf("Alloc(%d)", n))
	}
	fill(b)
	check(b)
	h.Free(b)
	return addr(b)
}

// clock is a counter in memory the race detector does not see (mapped
// with mmap, outside the Go heap and the data segments): goroutines order
// themselves in time through it (tick, await) without being ordered for the
// detector, so that only offheap's own synchronization orders their
// accesses to the memory it hands from one to another.
var clock = func() *atomic.Uint64 {
	m, err := syscall.Mmap(-1, 0, os.Getpagesize(), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		panic(err)
	}
	return (*atomic.Uint64)(unsafe.Pointer(&m[0]))
}()

// tick advances the clock by one.
func tick() { clock.Add(1) }

// await waits until the clock reaches t.
func await(t uint64) {
	for clock.Load() < t {
		runtime.Gosched()
	}
}

// steps runs each of fs on a goroutine of its own, one after another in
// time (on the clock), none of them ordered after another for the race
// detector, and keeps every one alive until the last is done: the detector
// reports a race only while it can recall the stack of the earlier access,
// and it forgets those of a goroutine that has exited first.
func steps(fs ...func()) {
	base := clock.Load()
	var wg sync.WaitGroup
	for i, f := range fs {
		wg.Go(func() {
			await(base + uint64(i))
			f()
			tick()
			await(base + uint64(len(fs)))
		})
	}
	wg.Wait()
}

// depot: a block that one goroutine frees is spilled to the central depot
// by another goroutine's Free, and a third gets it from the depot. Magazines
// of two blocks and one P make each step certain (checked).
func depot() {
	runtime.GOMAXPROCS(1)
	h := newHeap(offheap.Options{MagazineDepth: 2})
	b, x1, x2 := h.Alloc(64), h.Alloc(64), h.Alloc(64) // each carved by a refill of one: the magazine is empty
	var got uintptr
	steps(func() { depotFirst(h, b) }, func() { depotSpiller(h, x1, x2) }, func() { got = depotNext(h) })
	if got != addr(b) {
		fail("the third Alloc got %#x, not the spilled block %#x", got, addr(b))
	}
}

//go:noinline
func depotFirst(h *offheap.Heap, b []byte) {
	fill(b)
	h.Free(b) // into the magazine: [b]
}

//go:noinline
func depotSpiller(h *offheap.Heap, x1, x2 []byte) {
	h.Free(x1) // [b x1]
	h.Free(x2) // full: b goes to the depot, [x1 x2]
}

//go:noinline
func depotNext(h *offheap.Heap) uintptr {
	h.Alloc(64)      // x2
	h.Alloc(64)      // x1
	c := h.Alloc(64) // the depot's batch: b
	fill(c)
	return addr(c)
}

// pages: a large block's pages, written and freed on one goroutine, become
// a span of small blocks that a second goroutine's Alloc carves (the page
// heap's lock orders the two), and a third goroutine gets one of the carved
// blocks from the second's magazine. One P (checked).
func pages() {
	runtime.GOMAXPROCS(1)
	h := newHeap(offheap.Options{})
	var large, got uintptr
	steps(func() { large = pagesLarge(h) }, func() { pagesCarver(h) }, func() { got = pagesNext(h) })
	if got-large >= 1<<20 {
		fail("the carved block at %#x is not in the freed large block at %#x", got, large)
	}
}

//go:noinline
func pagesLarge(h *offheap.Heap) uintptr {
	b := h.Alloc(1 << 20)
	// Its first page only: the detector reports a race only while it can
	// recall the stack of the earlier access, among the last 32K or so of
	// its goroutine's (GORACE history_size).
	fill(b[:8<<10])
	h.Free(b)
	return addr(b)
}

//go:noinline
func pagesCarver(h *offheap.Heap) {
	h.Alloc(64) // a new span on the large block's pages; the rest of the batch goes to the magazine
}

//go:noinline
func pagesNext(h *offheap.Heap) uintptr {
	c := h.Alloc(64)
	fill(c)
	return addr(c)
}

// checkedHandoff: on a checked heap, a block freed on one goroutine waits
// in the quarantine (poisoned), is pushed out by a second goroutine's Frees
// (its poison checked) and allocated again by a third, which looks for it
// among its Allocs. One P: one quarantine.
func checkedHandoff() {
	runtime.GOMAXPROCS(1)
	h := newHeap(offheap.Options{Checked: true})
	b := h.Alloc(64)
	const others = 5000 // more than the quarantine holds
	var pushers [][]byte
	for range others {
		pushers = append(pushers, h.Alloc(64))
	}
	steps(func() { checkedFirst(h, b) }, func() { checkedPusher(h, pushers) }, func() { checkedNext(h, addr(b), 3*others) })
}

//go:noinline
func checkedFirst(h *offheap.Heap, b []byte) {
	fill(b)
	h.Free(b) // poisoned, into the quarantine
}

//go:noinline
func checkedPusher(h *offheap.Heap, bs [][]byte) {
	for _, b := range bs {
		h.Free(b) // the first Free pushes out, when the quarantine is full
	}
}

//go:noinline
func checkedNext(h *offheap.Heap, want uintptr, most int) {
	for range most {
		if c := h.Alloc(64); addr(c) == want {
			fill(c)
			return
		}
	}
	fail("%d Allocs did not get the freed block %#x back", most, want)
}

// reuseClosed: a heap is used and closed on one goroutine; a heap made on
// another takes the closed heap's memory (a race build keeps it for the
// next heap) and hands out its first block again.
func reuseClosed() {
	var first, second uintptr
	steps(func() { first = closedFirst() }, func() { second = closedNext() })
	if first != second {
		fail("the second heap's first block is at %#x, not at the first's %#x", second, first)
	}
}

//go:noinline
func closedFirst() uintptr {
	h := newHeap(offheap.Options{})
	b := h.Alloc(64)
	fill(b)
	h.Free(b)
	if err := h.Close(); err != nil {
		fail("Close: %v", err)
	}
	return addr(b)
}

//go:noinline
func closedNext() uintptr {
	h := newHeap(offheap.Options{})
	b := h.Alloc(64)
	fill(b)
	h.Free(b)
	h.Close()
	return addr(b)
}

// churn: goroutines allocate, fill, check and free blocks of every kind,
// keep a few live, hand some to another goroutine to free, and Trim runs
// meanwhile: blocks move between Ps' magazines, the depots, spans and the
// page heap, and come back to other goroutines. With caches, every
// goroutine allocates and frees through a Cache of its own, whose blocks
// reach the others' Caches through the central lists.
func churn(opts offheap.Options, caches bool) {
	h := newHeap(opts)
	const workers, ops = 4, 1500
	handoff := make(chan []byte, 64)
	var freers, wg sync.WaitGroup
	freers.Go(func() {
		_, free := allocFree(h, caches)
		defer free(nil)
		for b := range handoff {
			check(b)
			free(b)
		}
	})
	stop := make(chan struct{})
	freers.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
				h.Trim()
				runtime.Gosched()
			}
		}
	})
	for w := range workers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 7))
			alloc, free := allocFree(h, caches)
			defer free(nil)
			var live [][]byte
			for i := range ops {
				n := 1 + r.IntN(600)
				switch r.IntN(40) {
				case 0:
					n = 300<<10 + r.IntN(100<<10) // large
				case 1, 2, 3:
					n = 1 + r.IntN(64<<10)
				}
				b := alloc(n, i%3 != 0)
				fill(b)
				if r.IntN(8) == 0 {
					check(b)
					b = h.Realloc(b, n+r.IntN(2000)) // keeps the bytes, the rest zeroed
					fill(b)
				}
				switch {
				case r.IntN(4) == 0:
					handoff <- b
				default:
					live = append(live, b)
				}
				if len(live) > 8 {
					k := r.IntN(len(live))
					check(live[k])
					free(live[k])
					live = slices.Delete(live, k, k+1)
				}
			}
			for _, b := range live {
				check(b)
				free(b)
			}
		})
	}
	wg.Wait()
	close(handoff)
	close(stop)
	freers.Wait()
	if err := h.Close(); err != nil {
		fail("Close: %v", err)
	}
}

// allocFree returns a goroutine's Alloc (zeroed or not) and Free: the
// heap's, or those of a Cache of its own, which free(nil) closes.
func allocFree(h *offheap.Heap, cache bool) (alloc func(n int, zeroed bool) []byte, free func([]byte)) {
	if !cache {
		return func(n int, zeroed bool) []byte {
				if zeroed {
					return h.Alloc(n)
				}
				return h.AllocUnzeroed(n)
			}, func(b []byte) {
				if b != nil {
					h.Free(b)
				}
			}
	}
	c := h.NewLocal()
	return func(n int, zeroed bool) []byte {
			if zeroed {
				return c.Alloc(n)
			}
			return c.AllocUnzeroed(n)
		}, func(b []byte) {
			if b == nil {
				c.Close()
				return
			}
			c.Free(b)
		}
}

// arenaRounds: workers fill an arena, each round's workers on new
// goroutines, and tell the round's end by releasing a Shared, whose last
// Release resets the arena; then the arena's memory goes back to the heap
// and other goroutines allocate it.
func arenaRounds() {
	h := newHeap(offheap.Options{})
	a := h.NewArena()
	for round := range 12 {
		ended := make(chan struct{})
		s := h.NewShared(8, offheap.OnLastRelease(func([]byte) {
			a.Reset() // on the goroutine of the last Release
			close(ended)
		}))
		for w := range 4 {
			go arenaWorker(a, s.Retain(), round*4+w)
		}
		s.Release()
		<-ended
	}
	a.Release()
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 200 {
				b := h.Alloc(16 << (i % 12))
				fill(b)
				check(b)
				h.Free(b)
			}
			_ = w
		})
	}
	wg.Wait()
}

//go:noinline
func arenaWorker(a *offheap.Arena, s offheap.Shared, seed int) {
	r := rand.New(rand.NewPCG(uint64(seed), 3))
	for range 300 {
		n := 1 + r.IntN(300)
		if r.IntN(20) == 0 {
			n = 1 + r.IntN(40<<10) // a shared claim, or a chunk of its own
		}
		b := a.Alloc(n)
		zeroed(b, fmt.Sprintf("arena Alloc(%d)", n))
		fill(b)
		check(b)
	}
	s.Release()
}

// sharedHandoff: a Shared's holders read its bytes on their goroutines and
// release it; the last Release frees it, and another goroutine, which waits
// on the clock for every Release, allocates the block again and writes it.
// One P, so that it gets the very block (checked).
func sharedHandoff() {
	runtime.GOMAXPROCS(1)
	h := newHeap(offheap.Options{})
	for round := range 30 {
		n := 32 + round*40
		s := h.NewShared(n)
		fill(s.Bytes())
		block := addr(s.Bytes()) - 16 // the data follows a 16-byte header
		base := clock.Load()
		var wg sync.WaitGroup
		for range 3 {
			r := s.Retain()
			wg.Go(func() {
				sharedReader(r)
				tick()
				await(base + 5) // alive until the next owner is done: see steps
			})
		}
		s.Release()
		tick()
		var got uintptr
		wg.Go(func() {
			await(base + 4) // every holder's Release, the last one's Free
			got = useOnce(h, n+16)
			tick()
		})
		wg.Wait()
		if got != block {
			fail("round %d: the next owner got %#x, not the Shared's block %#x", round, got, block)
		}
	}
}

//go:noinline
func sharedReader(s offheap.Shared) {
	check(s.Bytes())
	s.Release()
}
