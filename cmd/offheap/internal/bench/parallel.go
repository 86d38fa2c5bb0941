package bench

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Parallel runs f(0) .. f(n-1) on n goroutines. Each goroutine starts, checks
// in, and waits at a barrier; the clock starts when all are released and
// stops when the last returns. So goroutine start-up is never timed, and no
// worker gets a head start that would flatter the scaling.
//
// The barrier spins (yielding) instead of blocking on a channel. Released
// from a channel, the waiters are readied onto the releasing goroutine's P,
// one of them into its runnext slot, which an idle P does not steal at once:
// measured here, a 2-worker trial of ~10 ms then often ran both workers on
// one P until the scheduler's 10 ms preemption, and "scaled" 0.8x where the
// same work scaled 0.5x. Spinning workers are already running, each on a P,
// when the flag flips.
func Parallel(n int, f func(w int)) time.Duration {
	var ready atomic.Int32
	var start atomic.Bool
	var done sync.WaitGroup
	done.Add(n)
	for w := range n {
		go func() {
			defer done.Done()
			ready.Add(1)
			for !start.Load() {
				runtime.Gosched()
			}
			f(w)
		}()
	}
	for ready.Load() < int32(n) {
		runtime.Gosched()
	}
	t0 := time.Now()
	start.Store(true)
	done.Wait()
	return time.Since(t0)
}

// Rounds runs f(w, r) on n goroutines, w = 0 .. n-1, for rounds r = 0 ..
// rounds-1: every worker finishes round r before any starts round r+1, and
// between rounds worker 0 alone runs between(r) (nil: nothing). It returns
// the time from the start of the first round to the end of the last,
// barriers and between included: the cost of batch work such as filling an
// arena and resetting it.
//
// The workers stay running from round to round and wait at the barriers
// by polling (see barrierSpin), yielding between polls when there are more
// workers than Ps. Starting goroutines per round would time the
// scheduler instead: a round of 50 µs split over 2 workers did not speed up
// at all when each round woke an idle P for its second worker.
func Rounds(n, rounds int, f func(w, r int), between func(r int)) time.Duration {
	var b roundBarrier
	spin := 0
	if n <= runtime.GOMAXPROCS(0) {
		spin = barrierSpin
	}
	return Parallel(n, func(w int) {
		b := &b // hoisted: the closure's captured pointer stays read-only
		for r := range rounds {
			f(w, r)
			b.arrived.Add(1)
			if w == 0 {
				waitAtLeast(&b.arrived, int64(n*(r+1)), spin)
				if between != nil {
					between(r)
				}
				b.released.Store(int64(r + 1))
				continue
			}
			waitAtLeast(&b.released, int64(r+1), spin)
		}
	})
}

// barrierSpin is how many times a Rounds worker that has a P to itself
// polls the barrier between yields. Yielding on every poll costs a trip
// through the scheduler each time: measured here at 2 workers, an empty
// round took 1.5-1.7 µs yielding and 0.8 µs polling, and the arena shape's
// loop without an allocator, in 830 KiB rounds, went from 0.76 of its
// 1-worker time to 0.59-0.62 (min of 9 interleaved runs). A few thousand
// polls, a few microseconds, still yield often enough not to hold up the
// collector.
const barrierSpin = 4096

// waitAtLeast returns once v reaches want: it polls v spin times between
// calls to runtime.Gosched (with spin 0, it yields on every poll, as a
// worker sharing its P with others must).
func waitAtLeast(v *atomic.Int64, want int64, spin int) {
	for {
		for range spin + 1 {
			if v.Load() >= want {
				return
			}
		}
		runtime.Gosched()
	}
}

// roundBarrier is Rounds' barrier: workers count in at arrived, and worker
// 0 opens the next round with released. Each on its own cache lines.
type roundBarrier struct {
	_        [128]byte
	arrived  atomic.Int64
	_        [120]byte
	released atomic.Int64
	_        [120]byte
}

// Split returns worker w's share of total work split over n workers; the
// shares sum to total.
func Split(total, n, w int) int {
	s := total / n
	if w < total%n {
		s++
	}
	return s
}

// Padded is a per-worker counter on a cache line pair of its own, so that
// workers writing their results never share a line (128 bytes covers the
// adjacent-line prefetcher).
type Padded struct {
	N int64
	_ [120]byte
}

// Rand is a per-worker xorshift generator: tiny, allocation-free and not
// shared, unlike math/rand's global source.
type Rand struct{ s uint64 }

// NewRand seeds a generator; a zero seed is replaced.
func NewRand(seed uint64) Rand {
	if seed == 0 {
		seed = 0x9E3779B97F4A7C15
	}
	return Rand{seed}
}

// Next returns the next 64 random bits.
func (r *Rand) Next() uint64 {
	x := r.s
	x ^= x << 13
	x ^= x >> 7
	x ^= x << 17
	r.s = x
	return x
}

// Intn returns a number in [0, n).
func (r *Rand) Intn(n int) int {
	return int((r.Next() >> 32) * uint64(n) >> 32)
}

// RSS returns the process's resident set size from /proc/self/status, or 0
// where that is not available. VmHWM would be simpler but is process-wide
// and never falls, so one trial's peak would leak into every later one:
// shapes sample VmRSS instead.
func RSS() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest)
			if len(f) >= 1 {
				kb, _ := strconv.ParseUint(f[0], 10, 64)
				return kb << 10
			}
		}
	}
	return 0
}
