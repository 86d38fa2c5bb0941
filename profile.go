package offheap

// Sampled allocation profiles: Go's heap profile for off-heap memory.
//
// One allocation in about every ProfileBytes bytes is sampled (sampling.go
// says how the slow path decides, at no cost to the fast path). A sampled
// block, small or large, is a page run of its own whose pagemap words carry
// pageheap.ClassSampled, as jemalloc promotes its sampled small allocations to a
// page-sized extent: Free's fast path takes no block of that class, so the
// Free of a sampled block reaches freeSlow, which finds the class there and
// counts the Free in the profile (freeSampled), while every other Free
// costs what it did. A sampled small block costs a page (8 KiB) for its
// lifetime, so the profile costs a heap of small blocks about 8 KiB /
// ProfileBytes of its live bytes in mapped memory: 1.6% at the default rate,
// and less resident, since only the block's own bytes are touched. The
// census counts a sampled block as what it is, a page run (Stats.Large, and
// InUseBytes by pages).
//
// An Arena's chunks are sampled where the arena takes them from the heap,
// and keep their class (pageheap.ClassArena): freeArenaRun looks them up in the
// profile while any is live. A Shared's block is sampled as a heap block,
// labelled kind=shared.
//
// The profile keeps, per call stack, block size and kind, the counts of
// sampled allocations and frees (a bucket), as the runtime's memory profile
// does, and WriteProfile scales them into estimates of the truth
// (scaleSample).

import (
	"compress/gzip"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/offheap/offheap/internal/callstack"
	"github.com/offheap/offheap/internal/pageheap"
)

// DefaultProfileBytes is Options.ProfileBytes when it is 0: the Go
// runtime's default runtime.MemProfileRate.
const DefaultProfileBytes = 512 << 10

// sampleKind says what a sampled block is, for the profile's kind label.
type sampleKind uint8

const (
	kindHeap   sampleKind = iota // Alloc and its variants, large blocks included
	kindArena                    // an Arena's chunk
	kindShared                   // a Shared's block
)

var kindNames = [...]string{kindHeap: "heap", kindArena: "arena", kindShared: "shared"}

// profiler is a heap's allocation profile.
type profiler struct {
	rate float64 // Options.ProfileBytes
	// mean[c] is rate/classSize[c]: the mean number of allocations of class
	// c between samples, less the sampled one.
	mean [numClasses]float64

	mu      sync.Mutex
	buckets map[bucketKey]*bucket
	live    map[uintptr]*bucket // the sampled blocks and chunks not yet freed, by address
	arenas  atomic.Int64        // how many of them are an Arena's
	stash   []uintptr           // runs of freed sampled blocks, kept for the next samples (stashRuns at most)
}

// The runs of up to stashPages pages that freed sampled blocks leave are
// kept, stashRuns of them at most, for the next samples of their size: the
// page heap would otherwise hand them back to the operating system, at once
// with a negative ReleaseDelay, and a sample would cost a system call and a
// page fault (several microseconds, against a quarter of one), which at the
// sampling odds of a 64 KiB block (one in nine) would multiply its pair's
// cost (BenchmarkPairSizes; offheap bench's pairs-64k/16k verdict). A kept
// run is counted freed (KeepRun) but keeps its pages' class, so that a
// second Free of its block finds it (freeSampled); Trim and Close give the
// runs back.
const (
	stashRuns  = 16
	stashPages = maxSmall >> pageShift
)

// bucketKey is what the profile tells samples apart by.
type bucketKey struct {
	st   stackID
	size uint64 // bytes of each block
	kind sampleKind
}

// bucket counts the sampled allocations of one bucketKey, and their frees.
type bucket struct{ allocs, frees uint64 }

// newProfiler returns the profile of a heap with the given ProfileBytes, or
// nil for a negative one.
func newProfiler(rate int) *profiler {
	if rate < 0 {
		return nil
	}
	if rate == 0 {
		rate = DefaultProfileBytes
	}
	p := &profiler{rate: float64(rate), buckets: make(map[bucketKey]*bucket), live: make(map[uintptr]*bucket)}
	for c := 1; c < numClasses; c++ {
		p.mean[c] = p.rate / float64(classSize[c])
	}
	callstack.InitDepot()
	return p
}

// gap draws how many magazine hits of class c pass before the next sample:
// the gap in bytes to the next sample is exponential with mean rate, so the
// count of whole blocks it spans is geometric.
func (p *profiler) gap(c uint8) uint64 {
	return uint64(min(rand.ExpFloat64()*p.mean[c], 1<<62))
}

// draw reports whether an allocation of n bytes that no counter counts (a
// large block, an arena's chunk) is sampled: with probability
// 1-exp(-size/rate) for its block of size bytes.
func (p *profiler) draw(n int) bool {
	return rand.Float64() < -math.Expm1(-float64(roundedSize(n))/p.rate)
}

// record adds the sampled block at a, allocated at st.
func (p *profiler) record(a uintptr, size int, st stackID, kind sampleKind) {
	k := bucketKey{st: st, size: uint64(size), kind: kind}
	p.mu.Lock()
	b := p.buckets[k]
	if b == nil {
		b = new(bucket)
		p.buckets[k] = b
	}
	b.allocs++
	p.live[a] = b
	p.mu.Unlock()
	if kind == kindArena {
		p.arenas.Add(1)
	}
}

// release counts the Free of the sampled block at a, if it is one, and
// reports whether it was.
func (p *profiler) release(a uintptr) bool {
	p.mu.Lock()
	b := p.live[a]
	if b != nil {
		b.frees++
		delete(p.live, a)
	}
	p.mu.Unlock()
	return b != nil
}

// allocSampled allocates the n bytes of a sampled allocation at st, between
// enter and exit: a page run of their own, marked pageheap.ClassSampled.
func (h *Heap) allocSampled(n int, zero bool, st stackID, kind sampleKind) ([]byte, error) {
	if !h.enter() {
		return nil, ErrClosed
	}
	defer h.exit()
	a, err := h.prof.reuse(&h.pages, n)
	if err != nil {
		return nil, err
	}
	if a != 0 {
		if zero {
			clear(bytesAt(a, n))
		}
	} else if a, err = h.allocLarge(n, zero, pageheap.ClassSampled); err != nil {
		return nil, err
	}
	if !zero && n > 8 {
		*(*uint64)(ptr(a + 8)) = 0 // as every block: no key where the program finds it
	}
	h.prof.record(a, roundedSize(n), st, kind)
	return bytesAt(a, n), nil
}

// freeSampled frees the sampled block at a of n bytes (cap), which
// freeable found live at p. Called between enter and exit.
func (h *Heap) freeSampled(a uintptr, p place, n int) {
	// Out of the profile first: once its pages are free, another sample
	// may take the address.
	if h.prof.release(a) && (h.prof.keep(&h.pages, a, uint32(p.size>>pageShift)) || h.pages.FreeRun(a, pageheap.ClassSampled)) {
		return
	}
	// A racing Free of the block took it since freeable looked.
	p = h.freeable(a)
	if p.kind == placeRun { // and another sample took the address since
		p.kind = placeFreed
	}
	panic(p.refusal("Free", a, n))
}

// reuse takes a kept run fit for a sampled block of n bytes, counted
// allocated again, or returns 0 if none is kept.
func (p *profiler) reuse(ph *pageheap.Heap, n int) (uintptr, error) {
	np, _ := pagesFor(n)
	if np > stashPages {
		return 0, nil
	}
	p.mu.Lock()
	a := uintptr(0)
	for i, r := range p.stash {
		if ph.RunPages(r) == np {
			a = r
			p.stash = slices.Delete(p.stash, i, i+1)
			break
		}
	}
	p.mu.Unlock()
	if a == 0 {
		return 0, nil
	}
	if err := ph.ReuseRun(np); err != nil {
		return 0, err // closed: Close unmapped it
	}
	return a, nil
}

// keep counts the run of np pages of the freed sampled block at a freed
// and keeps it, if it is short enough and the stash has room, and reports
// whether it did.
func (p *profiler) keep(ph *pageheap.Heap, a uintptr, np uint32) bool {
	if np > stashPages {
		return false
	}
	p.mu.Lock()
	ok := len(p.stash) < stashRuns
	if ok {
		p.stash = append(p.stash, a)
	}
	p.mu.Unlock()
	if ok {
		ph.KeepRun(np)
	}
	return ok
}

// kept reports whether a starts a kept run: a sampled block freed already.
func (p *profiler) kept(a uintptr) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Contains(p.stash, a)
}

// dropStash gives every kept run to the page heap's free set, for Trim.
func (p *profiler) dropStash(ph *pageheap.Heap) {
	p.mu.Lock()
	runs := p.stash
	p.stash = nil
	p.mu.Unlock()
	for _, a := range runs {
		ph.DropRun(a)
	}
}

// sampleArenaRun samples the arena run of n bytes at a, allocated at st.
func (h *Heap) sampleArenaRun(a uintptr, n int, st stackID) {
	h.prof.record(a, roundedSize(n), st, kindArena)
}

// releaseArenaRun takes the arena run at a out of the profile, if it was
// sampled.
func (h *Heap) releaseArenaRun(a uintptr) {
	if p := h.prof; p != nil && p.arenas.Load() > 0 && p.release(a) {
		p.arenas.Add(-1)
	}
}

// WriteProfile writes the heap's allocation profile to w in the gzipped
// pprof format go tool pprof reads: allocations since the heap was made and
// those not yet freed (the default view), estimated from samples
// (Options.ProfileBytes), each stack starting at the program's call into
// this package and labelled kind (heap, arena or shared). A checked heap
// writes no samples. It may be called at any time, also after Close; package
// offheappprof serves it over HTTP.
func (h *Heap) WriteProfile(w io.Writer) error {
	var samples []profSample
	rate := int64(-1)
	if p := h.prof; p != nil {
		rate = int64(p.rate)
		p.mu.Lock()
		for k, b := range p.buckets {
			samples = append(samples, profSample{bucketKey: k, bucket: *b})
		}
		p.mu.Unlock()
	}
	zw := gzip.NewWriter(w)
	if _, err := zw.Write(encodeProfile(samples, rate, time.Now())); err != nil {
		return err
	}
	return zw.Close()
}

// profSample is a bucket as WriteProfile found it.
type profSample struct {
	bucketKey
	bucket
}

// scaleSample estimates the blocks and bytes that count sampled blocks of
// size bytes stand for, at the given rate. A block of s bytes is sampled
// with probability 1-exp(-s/rate), so each sampled one stands
// for 1/(1-exp(-s/rate)) blocks: the runtime's scaleHeapSample.
func scaleSample(count, size uint64, rate int64) (blocks, bytes int64) {
	if count == 0 || size == 0 {
		return 0, 0
	}
	if rate <= 1 {
		return int64(count), int64(count * size)
	}
	scale := 1 / -math.Expm1(-float64(size)/float64(rate))
	return int64(float64(count) * scale), int64(float64(count*size) * scale)
}
