package shapes

import (
	"fmt"
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
			Doc: "a big heap (2 GiB; -long 8 GiB) on huge pages or not: random 8-byte reads over one block, and the latency of fresh " +
				"64 KiB and 16 MiB allocations written whole (p50/p99/p999); opt-in, about a minute",
			Work:    bench.FixedTotal,
			Order:   140,
			Unit:    "op",
			Workers: []int{1},
			Subs: []bench.Sub{
				{Name: "op=reads", Param: bigReads},
				{Name: "op=alloc64k", Param: bigAlloc(64 << 10)},
				{Name: "op=alloc16m", Param: bigAlloc(16 << 20)},
			},
			Metrics: []bench.Metric{
				{Name: "huge-pct", Doc: "share of the heap's resident memory on huge pages (HugePageBytes over ResidentBytes), %"},
				{Name: "p50-us", Doc: "alloc subs: median fresh allocation, Alloc and a write of every 4 KiB, in µs"},
				{Name: "p99-us", Doc: "alloc subs: 99th percentile of the same, in µs"},
				{Name: "p999-us", Doc: "alloc subs: 99.9th percentile of the same, in µs"},
				{Name: "setup-ms", Doc: "reads sub: allocating and writing the block, in ms (and, with huge pages, waiting for the collapse)"},
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
}

// bigSize is the heap's size for a trial: 2 GiB, or 8 GiB with -long.
func bigSize(t *bench.Trial) int { return t.Size(2<<30, 8<<30) }

// bigWay is the offheap way, with huge pages or not.
func bigWay(huge bool) func(t *bench.Trial) (bench.Sample, error) {
	return func(t *bench.Trial) (bench.Sample, error) {
		h, err := offheap.NewHeap(offheap.Options{HugePages: huge, ProfileRate: -1})
		if err != nil {
			return bench.Sample{}, err
		}
		defer h.Close()
		al := bigAllocator{alloc: h.AllocUnzeroed, free: h.Free, settle: func() float64 { return bigSettle(h, huge) }}
		s, err := t.Sub.Param.(bigOp)(t, al, bigSize(t))
		if err == nil && h.Stats().InUseBytes != 0 {
			err = fmt.Errorf("census: %d bytes in use after freeing every block", h.Stats().InUseBytes)
		}
		return s, err
	}
}

// bigSettle waits until h's huge pages stop growing (the collapse pass
// runs in the background, 100 ms after the allocations), at most 30 s, and
// returns the share of its resident memory on huge pages, in percent.
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
	for deadline := time.Now().Add(30 * time.Second); huge && time.Now().Before(deadline); {
		time.Sleep(300 * time.Millisecond)
		p, hb := share()
		if hb == last && hb > 0 {
			break
		}
		pct, last = p, hb
	}
	return pct
}

// bigMake is the go-make way.
func bigMake(t *bench.Trial) (bench.Sample, error) {
	defer debug.FreeOSMemory()
	al := bigAllocator{
		alloc:  func(n int) []byte { return make([]byte, n) },
		free:   func([]byte) {},
		settle: func() float64 { return 0 },
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

// bigAlloc allocates blocks of n bytes until size bytes are live, each
// written whole as it comes: the latency of a fresh allocation, faults
// included, its percentiles as metrics. Then all are freed.
func bigAlloc(n int) bigOp {
	return func(t *bench.Trial, al bigAllocator, size int) (bench.Sample, error) {
		count := max(size/n, 1)
		blocks := make([][]byte, 0, count)
		lat := make([]time.Duration, 0, count)
		start := time.Now()
		for range count {
			t0 := time.Now()
			b := al.alloc(n)
			bigWrite(b)
			lat = append(lat, time.Since(t0))
			blocks = append(blocks, b)
		}
		el := time.Since(start)
		pct := al.settle()
		for _, b := range blocks {
			al.free(b)
		}
		slices.Sort(lat)
		q := func(f float64) float64 {
			return float64(lat[min(int(f*float64(len(lat))), len(lat)-1)].Nanoseconds()) / 1e3
		}
		return bench.Sample{Ops: int64(count), Elapsed: el, Metrics: map[string]float64{
			"huge-pct": pct, "p50-us": q(0.5), "p99-us": q(0.99), "p999-us": q(0.999),
		}}, nil
	}
}
