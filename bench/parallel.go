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
