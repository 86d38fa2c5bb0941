package shapes

import (
	"math"
	"math/rand/v2"
	"sync"
)

// Key traces for the cache shapes: Zipf-distributed key numbers, made once
// per process and size and shared by every arm and trial, so that no trace
// is drawn inside a timed loop and every arm reads the same one.

// zipf draws ranks 0..n-1 with P(rank i) proportional to 1/(i+1)^theta, for
// 0 < theta < 1, by Gray et al.'s method ("Quickly generating
// billion-record synthetic databases", SIGMOD 1994), as YCSB does:
// math/rand's Zipf needs an exponent above 1.
type zipf struct {
	n                        int
	theta, alpha, zetan, eta float64
	halfPowTheta             float64
}

func newZipf(n int, theta float64) *zipf {
	z := &zipf{n: n, theta: theta, alpha: 1 / (1 - theta)}
	for i := 1; i <= n; i++ {
		z.zetan += 1 / math.Pow(float64(i), theta)
	}
	zeta2 := 1 + 1/math.Pow(2, theta)
	z.eta = (1 - math.Pow(2/float64(n), 1-theta)) / (1 - zeta2/z.zetan)
	z.halfPowTheta = 1 + math.Pow(0.5, theta)
	return z
}

// next returns a rank for the uniform u in [0, 1).
func (z *zipf) next(u float64) int {
	uz := u * z.zetan
	switch {
	case uz < 1:
		return 0
	case uz < z.halfPowTheta:
		return 1
	}
	return min(int(float64(z.n)*math.Pow(z.eta*u-z.eta+1, z.alpha)), z.n-1)
}

// scatter maps rank r of n to a key number, a bijection of 0..n-1, so that
// the hot keys are not neighbours (which would flatter an arm that shards
// by key number).
func scatter(r, n int) int {
	const p = 1_000_003 // a prime
	if n%p == 0 {
		return r
	}
	return int(uint64(r) * p % uint64(n))
}

// traceMemo holds the traces made so far, by name.
var traceMemo sync.Map

// memoTrace returns the trace called name, making it with make the first
// time.
func memoTrace(name string, make func() []uint32) []uint32 {
	if t, ok := traceMemo.Load(name); ok {
		return t.([]uint32)
	}
	t, _ := traceMemo.LoadOrStore(name, make())
	return t.([]uint32)
}

// zipfTrace is length key numbers of n keys, Zipf(theta) by rank and
// scattered. A theta above 1 uses math/rand's generator (v = 10, as
// phuslu/lru's benchmark does); below 1, Gray et al.'s.
func zipfTrace(n, length int, theta float64, seed uint64) []uint32 {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	out := make([]uint32, length)
	if theta > 1 {
		z := rand.NewZipf(r, theta, 10, uint64(n-1))
		for i := range out {
			out[i] = uint32(scatter(int(z.Uint64()), n))
		}
		return out
	}
	z := newZipf(n, theta)
	for i := range out {
		out[i] = uint32(scatter(z.next(r.Float64()), n))
	}
	return out
}

// uniformTrace is length key numbers drawn uniformly from n.
func uniformTrace(n, length int, seed uint64) []uint32 {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	out := make([]uint32, length)
	for i := range out {
		out[i] = uint32(r.IntN(n))
	}
	return out
}
