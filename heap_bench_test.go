package offheap

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/offheap/offheap/internal/pin"
)

// The benchmarks behind the heap's figures. Each compares arms in one run;
// read ratios, not nanoseconds. The README has the command and the numbers.

var sink []byte

var pool64 = sync.Pool{New: func() any { return new([64]byte) }}

// BenchmarkPair64 is one goroutine allocating and freeing 64 bytes: through
// the heap, through a Local, through sync.Pool and make, and the floors of
// a pinned design.
func BenchmarkPair64(b *testing.B) {
	h := newTestHeap(b, Options{})
	b.Run("arm=offheap-unzeroed", func(b *testing.B) {
		for b.Loop() {
			h.Free(h.AllocUnzeroed(64))
		}
	})
	b.Run("arm=offheap-cache", func(b *testing.B) {
		c := h.NewLocal()
		defer c.Close()
		for b.Loop() {
			c.Free(c.AllocUnzeroed(64))
		}
	})
	// A Local of a heap that samples for guard pages at the production
	// rate: the Local pair and one guarded sample in 50000.
	sampled := newTestHeap(b, Options{GuardOneIn: 50000})
	b.Run("arm=offheap-cache-sampled", func(b *testing.B) {
		c := sampled.NewLocal()
		defer c.Close()
		for b.Loop() {
			c.Free(c.AllocUnzeroed(64))
		}
	})
	b.Run("arm=cache-floor", func(b *testing.B) {
		c := new(cacheFloor)
		for b.Loop() {
			c.free(c.alloc(64))
		}
	})
	b.Run("arm=lean-floor", func(b *testing.B) {
		for b.Loop() {
			leanFree(leanAlloc())
		}
	})
	b.Run("arm=sync-pool", func(b *testing.B) {
		for b.Loop() {
			pool64.Put(pool64.Get().(*[64]byte))
		}
	})
	b.Run("arm=offheap", func(b *testing.B) {
		for b.Loop() {
			h.Free(h.Alloc(64))
		}
	})
	// The default heap profiles (ProfileBytes 0: 512 KiB); this one does
	// not, the arm that shows what the profile costs.
	noprof := newTestHeap(b, Options{ProfileBytes: -1})
	b.Run("arm=offheap-noprof", func(b *testing.B) {
		for b.Loop() {
			noprof.Free(noprof.Alloc(64))
		}
	})
	b.Run("arm=go-make", func(b *testing.B) {
		for b.Loop() {
			sink = make([]byte, 64)
		}
	})
	nomag := newTestHeap(b, Options{MagazineDepth: -1})
	b.Run("arm=offheap-nomag", func(b *testing.B) {
		for b.Loop() {
			nomag.Free(nomag.Alloc(64))
		}
	})
	b.Run("arm=floor", func(b *testing.B) {
		for b.Loop() {
			floorFree(floorAlloc())
		}
	})
}

// BenchmarkPairSizes is an Alloc+Free pair at the sizes where the size
// classes end: 16 KiB, 64 KiB and 256 KiB are classes, cached per P as 64 B
// is, and 1 MiB is a page run of its own from the page heap. The unzeroed
// arm is the allocator's time; the zeroed one adds clear's, which any
// allocator that zeroes pays alike. The noprof arm is the unzeroed one
// without the allocation profile, whose samples (one 64 KiB block in nine
// at the default rate) are most of a large class's pair.
func BenchmarkPairSizes(b *testing.B) {
	h := newTestHeap(b, Options{})
	noprof := newTestHeap(b, Options{ProfileBytes: -1})
	for _, n := range []int{64, 16 << 10, 64 << 10, 256 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("size=%d/arm=offheap-unzeroed", n), func(b *testing.B) {
			for b.Loop() {
				h.Free(h.AllocUnzeroed(n))
			}
		})
		b.Run(fmt.Sprintf("size=%d/arm=offheap-unzeroed-noprof", n), func(b *testing.B) {
			for b.Loop() {
				noprof.Free(noprof.AllocUnzeroed(n))
			}
		})
		b.Run(fmt.Sprintf("size=%d/arm=offheap", n), func(b *testing.B) {
			for b.Loop() {
				h.Free(h.Alloc(n))
			}
		})
	}
}

// The floor arm is the least a per-P magazine reached through procPin can
// cost: pin, pop, unpin and pin, push, unpin, with no size class, census,
// range check or block-start check. It shows how much of the heap's pair is
// the two pinned sections themselves.
type floorMag struct {
	n     uint32
	slots [64]uintptr
	_     [56]byte
}

var (
	floorMags  [64]floorMag
	floorBlock [64]byte
)

func floorAlloc() []byte {
	m := &floorMags[pin.Pin()%64]
	if m.n == 0 { // the first call on this P: give it a block
		m.slots[0], m.n = uintptr(unsafe.Pointer(&floorBlock)), 1
	}
	m.n--
	a := m.slots[m.n%64]
	pin.Unpin()
	return bytesAt(a, 64)
}

func floorFree(b []byte) {
	m := &floorMags[pin.Pin()%64]
	if m.n < 64 {
		m.slots[m.n%64] = addrOf(b)
		m.n++
	}
	pin.Unpin()
}

// The lean floor is the least two pinned sections cost: pin, pop from a
// fixed per-P array, unpin; pin, push, unpin; no slice, no modulo, no call
// but the pin's. The heap's pinned pair adds to it the census, the size
// class, the range and block-start checks and the double-free key.
type leanMag struct {
	n     uint64
	slots [8]uintptr
	_     [56]byte
}

var leanMags [maxProcs]leanMag

//go:nosplit
func leanAlloc() uintptr {
	m := &leanMags[uint(pin.Pin())%maxProcs]
	if m.n == 0 { // the first call on this P: give it a block
		m.slots[0], m.n = uintptr(unsafe.Pointer(&floorBlock)), 1
	}
	m.n--
	a := m.slots[m.n%8]
	pin.Unpin()
	return a
}

//go:nosplit
func leanFree(a uintptr) {
	m := &leanMags[uint(pin.Pin())%maxProcs]
	if m.n < 8 {
		m.slots[m.n%8] = a
		m.n++
	}
	pin.Unpin()
}

// The Local's floor is the least a stack a goroutine owns can cost with the
// shape Local's fast paths must have: two calls that are nosplit and never
// inlined (so that the heap's Close waits them out: closing.go, way 2),
// each a pop or a push on a fixed array, with no size class, census, range
// check, block-start check or key. What a Local pair costs above it is its
// checks; the distance from it to sync.Pool bounds how far below the pool a
// Local can go while it keeps them.
type cacheFloor struct {
	n     uint64
	slots [8]uintptr
}

//go:nosplit
//go:noinline
func (c *cacheFloor) alloc(n int) []byte {
	if c.n == 0 {
		c.slots[0], c.n = uintptr(unsafe.Pointer(&floorBlock)), 1
	}
	c.n--
	return bytesAt(c.slots[c.n%8], n)
}

//go:nosplit
//go:noinline
func (c *cacheFloor) free(b []byte) {
	if c.n < 8 {
		c.slots[c.n%8] = addrOf(b)
		c.n++
	}
}

// padded is per-worker state on its own cache lines.
type padded struct {
	n uint64
	_ [120]byte
}

// runWorkers splits total operations over w goroutines started behind a
// spinning barrier (a channel or WaitGroup release readies the waiters on
// one P, where an idle P may not steal them for a while; see bench.Parallel)
// and returns when all are done.
func runWorkers(w, total int, work func(n int, slot *padded)) {
	var ready atomic.Int32
	var start atomic.Bool
	var done sync.WaitGroup
	slots := make([]padded, w+1)
	for i := range w {
		done.Add(1)
		go func() {
			defer done.Done()
			n, slot := total/w, &slots[i]
			ready.Add(1)
			for !start.Load() {
				runtime.Gosched()
			}
			work(n, slot)
		}()
	}
	for ready.Load() < int32(w) {
		runtime.Gosched()
	}
	start.Store(true)
	done.Wait()
}

const scaleTotal = 1 << 20

// BenchmarkScale is a fixed total of 64-byte pairs split over 1, 2, 4 and 8
// goroutines: a perfectly scaling allocator halves the time per b.N
// iteration from 1 to 2 workers on 2 Ps and holds it past GOMAXPROCS. The
// compute arm is the control: if it does not scale, nothing here does.
func BenchmarkScale(b *testing.B) {
	heaps := map[string]*Heap{
		"offheap":       newTestHeap(b, Options{}),
		"offheap-nomag": newTestHeap(b, Options{MagazineDepth: -1}),
	}
	for _, w := range []int{1, 2, 4, 8} {
		for _, arm := range []string{"compute", "offheap", "offheap-nomag", "offheap-cache"} {
			b.Run(fmt.Sprintf("arm=%s/workers=%d", arm, w), func(b *testing.B) {
				h := heaps[arm]
				for b.Loop() {
					runWorkers(w, scaleTotal, func(n int, slot *padded) {
						if arm == "offheap-cache" {
							c := heaps["offheap"].NewLocal() // each worker its own
							for range n {
								c.Free(c.AllocUnzeroed(64))
							}
							c.Close()
							return
						}
						if h == nil {
							x := slot.n
							for i := range n {
								x = x*6364136223846793005 + uint64(i)
							}
							slot.n = x
							return
						}
						for range n {
							h.Free(h.AllocUnzeroed(64))
						}
					})
				}
			})
		}
	}
}

// BenchmarkLiveK allocates k blocks of each of 4 classes, then frees them
// all, round after round: k blocks of a class are live at once. A magazine
// shallower than k serves one Alloc in k and takes the central lock for the
// rest: seed 000's depth trap, which the pairs shape cannot see. ns/pair is
// the time of one Alloc+Free.
func BenchmarkLiveK(b *testing.B) {
	sizes := []int{32, 64, 256, 1024}
	for _, k := range []int{1, 3, 8, 32} {
		for _, arm := range []struct {
			name  string
			depth int
		}{{"offheap", 0}, {"offheap-depth1", 1}, {"offheap-nomag", -1}} {
			b.Run(fmt.Sprintf("k=%d/arm=%s", k, arm.name), func(b *testing.B) {
				h := newTestHeap(b, Options{MagazineDepth: arm.depth})
				liveKRounds(b, h, k, sizes)
				s := h.Stats()
				b.ReportMetric(float64(s.MagazineHits)/float64(max(s.Allocs, 1))*100, "%hits")
			})
		}
	}
}

// BenchmarkLiveKBig is BenchmarkLiveK for the classes above 32 KiB, whose
// magazines hold one to three blocks (MagazineBound): past that, blocks go
// through the central depot, and past the depot, to spans and the page heap.
func BenchmarkLiveKBig(b *testing.B) {
	sizes := []int{48 << 10, 64 << 10, 128 << 10, 256 << 10}
	for _, k := range []int{1, 2, 3, 8} {
		b.Run(fmt.Sprintf("k=%d/arm=offheap", k), func(b *testing.B) {
			liveKRounds(b, newTestHeap(b, Options{}), k, sizes)
		})
	}
}

// liveKRounds allocates k blocks of each size, then frees them all, b.N
// times, and reports the time per Alloc+Free as ns/pair.
func liveKRounds(b *testing.B, h *Heap, k int, sizes []int) {
	live := make([][]byte, k*len(sizes))
	for b.Loop() {
		for i := range live {
			live[i] = h.AllocUnzeroed(sizes[i%len(sizes)])
		}
		for _, x := range live {
			h.Free(x)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(live)), "ns/pair")
}

// BenchmarkProdCons: one goroutine allocates, another frees, in batches of
// 256 through a channel, the batch slices recycled so the harness allocates
// nothing; compared with one goroutine doing pairs. The null arm is the same
// loop with no allocator: the harness's own cost per block.
func BenchmarkProdCons(b *testing.B) {
	buf := make([]byte, 64)
	b.Run("shape=prodcons/arm=null", func(b *testing.B) {
		prodCons(b, func() []byte { return buf }, func([]byte) {})
	})
	for _, arm := range []struct {
		name  string
		depth int
	}{{"offheap", 0}, {"offheap-nomag", -1}} {
		h := newTestHeap(b, Options{MagazineDepth: arm.depth})
		b.Run("shape=pairs/arm="+arm.name, func(b *testing.B) {
			for b.Loop() {
				h.Free(h.AllocUnzeroed(64))
			}
		})
		b.Run("shape=prodcons/arm="+arm.name, func(b *testing.B) {
			prodCons(b, func() []byte { return h.AllocUnzeroed(64) }, h.Free)
			b.ReportMetric(float64(h.Stats().MappedBytes), "mapped-bytes")
		})
		if arm.depth == 0 {
			b.Run("shape=prodcons/arm=offheap-cache", func(b *testing.B) {
				c := h.NewLocal() // the consumer's: only it uses the Local
				prodCons(b, func() []byte { return h.AllocUnzeroed(64) }, c.Free)
				c.Close()
				b.ReportMetric(float64(h.Stats().MappedBytes), "mapped-bytes")
			})
		}
	}
}

// prodCons runs b.N allocations on the calling goroutine and their frees on
// another, handed over in batches.
func prodCons(b *testing.B, alloc func() []byte, free func([]byte)) {
	const batchLen, batches = 256, 8
	full := make(chan [][]byte, batches)
	empty := make(chan [][]byte, batches)
	for range batches {
		empty <- make([][]byte, 0, batchLen)
	}
	done := make(chan struct{})
	go func() {
		for batch := range full {
			for _, x := range batch {
				free(x)
			}
			empty <- batch[:0]
		}
		close(done)
	}()
	batch := <-empty
	for b.Loop() {
		batch = append(batch, alloc())
		if len(batch) == batchLen {
			full <- batch
			batch = <-empty
		}
	}
	full <- batch
	close(full)
	<-done
}
