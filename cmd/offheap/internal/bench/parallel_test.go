package bench

import (
	"runtime"
	"sync/atomic"
	"testing"
)

// TestRounds checks Rounds' barrier, both with workers that have a P each
// (they spin) and with more workers than Ps (they yield): no worker starts
// round r+1 before every worker has finished round r and between(r) has
// run, and between(r) sees every worker's round r done.
func TestRounds(t *testing.T) {
	const rounds = 200
	for _, n := range []int{1, 2, runtime.GOMAXPROCS(0), 2*runtime.GOMAXPROCS(0) + 1} {
		done := make([]atomic.Int64, rounds) // workers that finished round r
		var betweens atomic.Int64
		var bad atomic.Int64
		Rounds(n, rounds, func(w, r int) {
			if r > 0 && (done[r-1].Load() != int64(n) || betweens.Load() != int64(r)) {
				bad.Add(1)
			}
			for range 100 * (w + 1) { // uneven work, so that the barrier has to wait
				runtime.Gosched()
			}
			done[r].Add(1)
		}, func(r int) {
			if done[r].Load() != int64(n) || (r+1 < rounds && done[r+1].Load() != 0) {
				bad.Add(1)
			}
			betweens.Add(1)
		})
		if bad.Load() != 0 || betweens.Load() != rounds {
			t.Errorf("%d workers: %d rounds started or judged early, between ran %d times (want %d)", n, bad.Load(), betweens.Load(), rounds)
		}
	}
}
