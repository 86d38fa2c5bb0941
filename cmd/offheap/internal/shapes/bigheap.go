package shapes

import (
	"fmt"
	"math"
	"runtime"
	"runtime/debug"
	"slices"
	"time"

	"github.com/offheap/offheap"
	"github.com/offheap/offheap/cmd/offheap/internal/bench"
)

func init() {
	bench.RegisterWayShape(bench.WayShape{
		Spec: bench.Spec{
			Name: "bigheap",
			Doc: "a big heap (2 GiB; -long 8 GiB; -bigheap-size) on huge pages or not: random 8-byte reads over one block, and the latency of fresh " +
				"1 KiB, 64 KiB and 16 MiB allocations written whole (p50/p99/p999), and the resident memory left after a churn and Trim; opt-in, about 10 minutes",
			Work:    bench.FixedTotal,
			Order:   140,
			Unit:    "op",
			Workers: []int{1},
			Subs: []bench.Sub{
				{Name: "op=reads", Param: bigReads},
				{Name: "op=alloc1k", Param: bigAlloc(1 << 10)},
				{Name: "op=alloc64k", Param: bigAlloc(64 << 10)},
				{Name: "op=alloc16m", Param: bigAlloc(16 << 20)},
				{Name: "op=churn", Param: bigChurn},
				{Name: "op=grow", Param: bigGrow},
			},
			Metrics: []bench.Metric{
				{Name: "huge-pct", Doc: "share of the heap's resident memory on huge pages (HugePageBytes over ResidentBytes), %"},
				{Name: "p50-us", Doc: "alloc subs: median fresh allocation, Alloc and a write of every 4 KiB, in µs (4 rounds of filling the heap, trimmed between)"},
				{Name: "p99-us", Doc: "alloc subs: 99th percentile of the same, in µs"},
				{Name: "p999-us", Doc: "alloc subs: 99.9th percentile of the same, in µs"},
				{Name: "setup-ms", Doc: "reads sub: allocating and writing the block, in ms (and, with huge pages, waiting for the collapse)"},
				{Name: "hand-x", Doc: "grow sub: the block grown by hand, AllocUnzeroed + copy + Free (offheap) or make + copy, over this way's Realloc (make: append), same trial"},
				{Name: "trim-mib", Doc: "churn sub: the heap's resident memory after the churn and a Trim, in MiB (ResidentBytes; 0 for make)"},
			},
			FixedSize: true,
		},
		Ways: []bench.Way{
			{Name: "offheap", Doc: "an offheap heap, HugePages off", Run: bigWay(false)},
			{Name: "offheap-huge", Doc: "an offheap heap with Options.HugePages", Run: bigWay(true)},
			{Name: "go-make", Doc: "make, the Go heap (no huge pages under THP's madvise mode, since Go 1.21.4)", Run: bigMake},
		},
	})
}

// bigOp is one sub of the bigheap shape: the work on an allocator of size
// bytes in all.
type bigOp func(t *bench.Trial, al bigAllocator, size int) (bench.Sample, error)

// bigAllocator is what the bigheap ways offer a sub.
type bigAllocator struct {
	alloc func(n int) []byte
	free  func(b []byte)
	// settle waits, after a setup, until the heap's huge pages are made
	// (offheap-huge), and reports the share of its memory on them.
	settle func() float64
	// trim trims the heap and reports its resident bytes (offheap ways;
	// make's gives the Go heap's free memory back and reports 0).
	trim func() uint64
	// realloc grows b to n bytes: Realloc, or append for make.
	realloc func(b []byte, n int) []byte
}

// bigSize is the heap's size for a trial: -bigheap-size, or else 2 GiB,
// 8 GiB with -long (on a 32-bit system, whose ints cannot say these, the
// largest int).
func bigSize(t *bench.Trial) int {
	const gib = uint64(1) << 30
	if t.HeapSize > 0 {
		n := int(min(uint64(t.HeapSize), math.MaxInt))
		return t.Size(n, n)
	}
	return t.Size(int(min(2*gib, math.MaxInt)), int(min(8*gib, math.MaxInt)))
}

// bigWay is the offheap way, with huge pages or not.
func bigWay(huge bool) func(t *bench.Trial) (bench.Sample, error) {
	return func(t *bench.Trial) (bench.Sample, error) {
		h, err := offheap.NewHeap(offheap.Options{HugePages: huge, ProfileBytes: -1})
		if err != nil {
			return bench.Sample{}, err
		}
		defer h.Close()
		al := bigAllocator{alloc: h.AllocUnzeroed, free: h.Free, settle: func() float64 { return bigSettle(h, huge) },
			trim: func() uint64 { h.Trim(); r, _ := h.ResidentBytes(); return r }, realloc: h.Realloc}
		s, err := t.Sub.Param.(bigOp)(t, al, bigSize(t))
		if err == nil && h.Stats().InUseBytes != 0 {
			err = fmt.Errorf("census: %d bytes in use after freeing every block", h.Stats().InUseBytes)
		}
		return s, err
	}
}

// bigSettle waits until h's huge pages stop growing for 2 s (the collapse
// pass runs in the background, after a lull in allocation and then every
// second while ranges are not yet dense), at most a minute, and returns the
// share of its resident memory on huge pages, in percent.
func bigSettle(h *offheap.Heap, huge bool) float64 {
	share := func() (float64, uint64) {
		hb, _ := h.HugePageBytes()
		r, _ := h.ResidentBytes()
		if r == 0 {
			return 0, hb
		}
		return 100 * float64(hb) / float64(r), hb
	}
	pct, last := share()
	still := time.Now()
	for deadline := time.Now().Add(time.Minute); huge && time.Now().Before(deadline); {
		time.Sleep(250 * time.Millisecond)
		p, hb := share()
		if hb != last {
			still = time.Now()
		} else if time.Since(still) > 2*time.Second {
			break
		}
		pct, last = p, hb
	}
	return pct
}

// bigMake is the go-make way.
func bigMake(t *bench.Trial) (bench.Sample, error) {
	defer debug.FreeOSMemory()
	runtime.GC()
	al := bigAllocator{
		alloc:  func(n int) []byte { return make([]byte, n) },
		free:   func([]byte) {},
		settle: func() float64 { return 0 },
		trim:   func() uint64 { debug.FreeOSMemory(); return 0 },
		realloc: func(b []byte, n int) []byte {
			return append(b, make([]byte, n-len(b))...)
		},
	}
	return t.Sub.Param.(bigOp)(t, al, bigSize(t))
}

// bigWrite writes a byte of every 4 KiB of b: its first touch.
func bigWrite(b []byte) {
	for i := 0; i < len(b); i += 4096 {
		b[i] = byte(i)
	}
}

// bigReads reads 8 bytes at 4M random offsets of one block of size bytes,
// written whole first (untimed).
var bigReads bigOp = func(t *bench.Trial, al bigAllocator, size int) (bench.Sample, error) {
	t0 := time.Now()
	b := al.alloc(size)
	bigWrite(b)
	pct := al.settle()
	setup := time.Since(t0)
	const reads = 4 << 20
	x := uint64(0x9e3779b97f4a7c15)
	var sum uint64
	words := uint64(size / 8)
	start := time.Now()
	for range reads {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		i := (x % words) * 8
		sum += uint64(b[i]) | uint64(b[i+7])<<8
	}
	el := time.Since(start)
	runtime.KeepAlive(sum)
	al.free(b)
	return bench.Sample{Ops: reads, Elapsed: el, Metrics: map[string]float64{
		"huge-pct": pct, "setup-ms": float64(setup.Milliseconds()),
	}}, nil
}

// bigAllocRounds is how many times bigAlloc fills the heap, trimming it
// between rounds so that every round's pages are fresh: enough samples for
// a p999 of 16 MiB blocks (512 at 2 GiB).
const bigAllocRounds = 4

// bigAlloc allocates blocks of n bytes until size bytes are live, each
// written whole as it comes: the latency of a fresh allocation, faults
// included, its percentiles as metrics. Then all are freed and the heap
// trimmed (untimed), bigAllocRounds times.
func bigAlloc(n int) bigOp {
	return func(t *bench.Trial, al bigAllocator, size int) (bench.Sample, error) {
		count := max(size/n, 1)
		blocks := make([][]byte, 0, count)
		lat := make([]time.Duration, 0, count*bigAllocRounds)
		var el time.Duration
		pct := 0.0
		for round := range bigAllocRounds {
			start := time.Now()
			for range count {
				t0 := time.Now()
				b := al.alloc(n)
				bigWrite(b)
				lat = append(lat, time.Since(t0))
				blocks = append(blocks, b)
			}
			el += time.Since(start)
			if round == 0 {
				pct = al.settle()
			}
			for _, b := range blocks {
				al.free(b)
			}
			blocks = blocks[:0]
			al.trim()
		}
		slices.Sort(lat)
		q := func(f float64) float64 {
			return float64(lat[min(int(f*float64(len(lat))), len(lat)-1)].Nanoseconds()) / 1e3
		}
		return bench.Sample{Ops: int64(len(lat)), Elapsed: el, Metrics: map[string]float64{
			"huge-pct": pct, "p50-us": q(0.5), "p99-us": q(0.99), "p999-us": q(0.999),
		}}, nil
	}
}

// bigChurn fills size bytes with blocks of 1 KiB to 16 MiB (a quarter of
// the bytes in each of 1 KiB, 64 KiB, 1 MiB and 16 MiB blocks), written
// whole, waits for the huge pages, then three times frees every other
// block still held and allocates as many bytes again in blocks of the next
// size up (16 MiB wraps to 1 KiB), and finally frees two blocks in three
// and trims: the resident memory left is the metric. The time is the
// churn's, setup and settling excluded.
var bigChurn bigOp = func(t *bench.Trial, al bigAllocator, size int) (bench.Sample, error) {
	sizes := []int{1 << 10, 64 << 10, 1 << 20, 16 << 20}
	var blocks [][]byte
	fill := func(bytes, from int) int {
		ops := 0
		for i := range sizes {
			n := sizes[(from+i)%len(sizes)]
			for range max(bytes/len(sizes)/n, 1) {
				b := al.alloc(n)
				bigWrite(b)
				blocks = append(blocks, b)
				ops++
			}
		}
		return ops
	}
	fill(size, 0)
	al.settle()
	start := time.Now()
	ops := 0
	for round := 1; round <= 3; round++ {
		kept, freed := blocks[:0], 0
		for i, b := range blocks {
			if i%2 == 0 {
				freed += len(b)
				al.free(b)
				ops++
			} else {
				kept = append(kept, b)
			}
		}
		blocks = kept
		ops += fill(freed, round)
	}
	el := time.Since(start)
	kept := blocks[:0]
	for i, b := range blocks {
		if i%3 != 0 {
			al.free(b)
		} else {
			kept = append(kept, b)
		}
	}
	al.settle()
	res := al.trim()
	for _, b := range kept {
		al.free(b)
	}
	return bench.Sample{Ops: int64(ops), Elapsed: el, Metrics: map[string]float64{
		"trim-mib": float64(res) / (1 << 20),
	}}, nil
}

// bigGrow grows a block from 1 MiB to 1 GiB (-long: 4 GiB), doubling it
// and writing its new half each time, with the way's Realloc, and in the
// same trial, interleaved step by step, by hand: a new block, a copy, a
// Free of the old. The time is the Realloc calls'; hand-x is the hand
// steps' time over it.
var bigGrow bigOp = func(t *bench.Trial, al bigAllocator, size int) (bench.Sample, error) {
	top := max(size/2, 2<<20)
	var el, hand time.Duration
	a, b := al.alloc(1<<20), al.alloc(1<<20)
	bigWrite(a)
	bigWrite(b)
	steps := 0
	for n := 2 << 20; n <= top; n *= 2 {
		t0 := time.Now()
		a = al.realloc(a, n)
		el += time.Since(t0)
		bigWrite(a[n/2:])
		t0 = time.Now()
		nb := al.alloc(n)
		copy(nb, b)
		al.free(b)
		hand += time.Since(t0)
		b = nb
		bigWrite(b[n/2:])
		steps++
	}
	al.free(a)
	al.free(b)
	return bench.Sample{Ops: int64(steps), Elapsed: el, Metrics: map[string]float64{
		"hand-x": float64(hand) / float64(el),
	}}, nil
}
