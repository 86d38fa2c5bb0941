// Command racecheck is the program TestRaceDetector (race_detector_test.go)
// builds with -race and runs once per scenario, named by its argument. A
// racy scenario has a data race on off-heap memory between two functions
// the test names, which the race detector must report; a correct one
// synchronizes only through offheap (or through what the detector already
// sees) and must get no report. Each prints "racecheck NAME: ok" at its end,
// or exits with status 3 and a reason when it could not set up what it
// tests.
package main

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

var scenarios = map[string]func(){
	// Racy: the detector must report them.
	"alloc":            racyAlloc,
	"arena":            racyArena,
	"shared":           racyShared,
	"write-after-free": writeAfterFree,
	"ref-map":          func() { refMap(false) },

	// Correct: the detector must report nothing.
	"handoff":         func() { handoff(false) },
	"handoff-far":     func() { handoff(true) },
	"checked-handoff": checkedHandoff,
	"reuse-closed":    reuseClosed,
	"churn":           func() { churn(offheap.Options{}, false) },
	"churn-checked":   func() { churn(offheap.Options{Checked: true}, false) },
	"churn-cache":     func() { churn(offheap.Options{}, true) },
	"arena-rounds":    arenaRounds,
	"shared-handoff":  sharedHandoff,
	"depot":           depot,
	"pages":           pages,
	"ref-map-copy":    func() { refMap(true) },
}

func main() {
	if len(os.Args) != 2 || scenarios[os.Args[1]] == nil {
		names := make([]string, 0, len(scenarios))
		for n := range scenarios {
			names = append(names, n)
		}
		slices.Sort(names)
		fmt.Fprintf(os.Stderr, "usage: racecheck SCENARIO, one of %v\n", names)
		os.Exit(2)
	}
	scenarios[os.Args[1]]()
	fmt.Printf("racecheck %s: ok\n", os.Args[1])
}

// newHeap makes a heap without the allocation profile, whose samples take
// blocks of their own: the scenarios hand a block from one owner to the next
// and check that the next owner got it.
func newHeap(opts offheap.Options) *offheap.Heap {
	opts.ProfileBytes = -1
	h, err := offheap.NewHeap(opts)
	if err != nil {
		fail("NewHeap: %v", err)
	}
	return h
}

func fail(format string, args ...any) {
	fmt.Printf("racecheck %s: "+format+"\n", append([]any{os.Args[1]}, args...)...)
	os.Exit(3)
}

func addr(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }

// fill writes b's pattern, derived from its address, a word at a time;
// check verifies it. A word access is one access for the race detector,
// which keeps four per 8 bytes: a loop of byte accesses by one goroutine
// would push another's out before it is compared with them.
func fill(b []byte) {
	seed := uint64(addr(b))
	i := 0
	for ; i+8 <= len(b); i += 8 {
		*(*uint64)(unsafe.Pointer(&b[i])) = seed + uint64(i)
	}
	for ; i < len(b); i++ {
		b[i] = byte(seed) + byte(i)
	}
}

func check(b []byte) { checkAs(b, addr(b)) }

// checkAs verifies that b holds the pattern fill wrote at address at: a
// copy of a filled block holds its original's.
func checkAs(b []byte, at uintptr) {
	seed := uint64(at)
	i := 0
	for ; i+8 <= len(b); i += 8 {
		if *(*uint64)(unsafe.Pointer(&b[i])) != seed+uint64(i) {
			fail("block %#x (%d bytes): word %d changed", addr(b), len(b), i/8)
		}
	}
	for ; i < len(b); i++ {
		if b[i] != byte(seed)+byte(i) {
			fail("block %#x (%d bytes): byte %d changed", addr(b), len(b), i)
		}
	}
}

// zeroed fails unless b is all zeros, read a word at a time.
func zeroed(b []byte, what string) {
	i := 0
	for ; i+8 <= len(b); i += 8 {
		if *(*uint64)(unsafe.Pointer(&b[i])) != 0 {
			fail("%s: word %d is not zero", what, i/8)
		}
	}
	for ; i < len(b); i++ {
		if b[i] != 0 {
			fail("%s: byte %d is not zero", what, i)
		}
	}
}

// twoWriters runs a and b on two goroutines that do not synchronize with
// each other, and waits for both.
func twoWriters(a, b func()) {
	var wg sync.WaitGroup
	wg.Go(a)
	wg.Go(b)
	wg.Wait()
}

// racyAlloc: two goroutines write the same byte of a block.
func racyAlloc() {
	h := newHeap(offheap.Options{})
	b := h.Alloc(64)
	twoWriters(func() { allocWriterA(b) }, func() { allocWriterB(b) })
	h.Free(b)
}

//go:noinline
func allocWriterA(b []byte) { b[5] = 1 }

//go:noinline
func allocWriterB(b []byte) { b[5] = 2 }

// racyArena: two goroutines write the same byte of an arena's allocation.
func racyArena() {
	h := newHeap(offheap.Options{})
	a := h.NewArena()
	b := a.Alloc(64)
	twoWriters(func() { arenaWriterA(b) }, func() { arenaWriterB(b) })
	a.Release()
}

//go:noinline
func arenaWriterA(b []byte) { b[7] = 1 }

//go:noinline
func arenaWriterB(b []byte) { b[7] = 2 }

// racyShared: two holders of a Shared write the same byte of its data.
func racyShared() {
	h := newHeap(offheap.Options{})
	s := h.NewShared(64)
	s1, s2 := s.Retain(), s.Retain()
	twoWriters(func() { sharedWriterA(s1) }, func() { sharedWriterB(s2) })
	s.Release()
}

//go:noinline
func sharedWriterA(s offheap.Shared) { s.Bytes()[3] = 1; s.Release() }

//go:noinline
func sharedWriterB(s offheap.Shared) { s.Bytes()[3] = 2; s.Release() }

// writeAfterFree: a goroutine writes a block after its Free, which is
// ordered before the next owner's Alloc of the same block (a channel), the
// write is not.
func writeAfterFree() {
	runtime.GOMAXPROCS(1) // one P, one magazine: the next Alloc of the size gets the block back
	h := newHeap(offheap.Options{})
	b := h.Alloc(64)
	freed := make(chan struct{})
	var got uintptr
	twoWriters(func() { staleWriter(h, b, freed) }, func() { got = nextOwner(h, freed) })
	if got != addr(b) {
		fail("the next owner got the block at %#x, not the freed one at %#x", got, addr(b))
	}
}

//go:noinline
func staleWriter(h *offheap.Heap, b []byte, freed chan struct{}) {
	h.Free(b)
	close(freed)
	b[0] = 1 // the bug
}

//go:noinline
func nextOwner(h *offheap.Heap, freed chan struct{}) uintptr {
	<-freed
	c := h.Alloc(64)
	c[0] = 2
	return addr(c)
}

// refMap: a map from keys to Refs under a lock, one goroutine reading a
// value while another replaces it (frees the old block, which the next
// Alloc hands out again on the one P). Without copy, the reader resolves
// the Ref under the lock and reads the bytes after it: a read after free
// that checked mode cannot see and the detector must. With copy, the reader
// copies the bytes out under the lock, and nothing races.
func refMap(copyOut bool) {
	runtime.GOMAXPROCS(1)
	h := newHeap(offheap.Options{})
	var mu sync.Mutex
	index := map[uint64]offheap.Ref{}
	b := h.Alloc(64)
	fill(b)
	index[1] = h.Ref(b)
	resolved := make(chan struct{})
	var got uintptr
	twoWriters(func() { refReader(h, &mu, index, copyOut, resolved) },
		func() { got = refReplacer(h, &mu, index, resolved) })
	if got != addr(b) {
		fail("the next owner got the block at %#x, not the freed one at %#x", got, addr(b))
	}
}

//go:noinline
func refReader(h *offheap.Heap, mu *sync.Mutex, index map[uint64]offheap.Ref, copyOut bool, resolved chan struct{}) {
	mu.Lock()
	v := h.Bytes(index[1])
	at := addr(v)
	if copyOut {
		v = slices.Clone(v)
	}
	mu.Unlock()
	close(resolved)
	if copyOut {
		checkAs(v, at)
		return
	}
	// The bug: v's block may be freed and handed out again by now, so its
	// words are read, not checked (they may be the next owner's by now).
	for i := 0; i+8 <= len(v); i += 8 {
		readSink += *(*uint64)(unsafe.Pointer(&v[i]))
	}
}

// readSink keeps refReader's reads.
var readSink uint64

// refReplacer waits until the reader resolved the Ref (so that the reader
// reads the old block), then replaces the value as a set does: the new
// value's block is the old one, freed and allocated again.
//
//go:noinline
func refReplacer(h *offheap.Heap, mu *sync.Mutex, index map[uint64]offheap.Ref, resolved chan struct{}) uintptr {
	<-resolved
	mu.Lock()
	old := index[1]
	delete(index, 1)
	mu.Unlock()
	h.Free(h.Bytes(old))
	c := h.Alloc(64)
	fill(c)
	mu.Lock()
	index[1] = h.Ref(c)
	mu.Unlock()
	return addr(c)
}

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
		block := addr(s.Bytes()) - 16 // the data follows a 16-byte header (shared.go)
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
