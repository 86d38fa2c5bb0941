// Command racecheck is the program TestRaceDetector
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
	"os"
	"runtime"
	"slices"
	"sync"
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
	h.FreeRef(old)
	c := h.Alloc(64)
	fill(c)
	mu.Lock()
	index[1] = h.Ref(c)
	mu.Unlock()
	return addr(c)
}
