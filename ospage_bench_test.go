package offheap

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/offheap/offheap/internal/pageheap"
)

// BenchmarkTrimResident is what a heap keeps of the system's memory after
// churn and Trim, the figure that depends on the OS page (docs/DESIGN.md,
// OS pages): run it natively and under the tags offheappage16k and
// offheappage64k, which simulate those kernels (internal/osmem).
//
//	go test -run '^$' -bench TrimResident -benchtime 16x -cpu 1 [-tags offheappage64k] .
//
// Each shape builds a live set of 32 MiB of blocks of sizes it draws, churns
// it (each step frees a random live block and allocates a new one), frees
// three quarters of it at random, and trims. It reports the bytes still in
// use (inuse-MiB), the heap's mapped bytes (mapped-MiB), what the system
// says is resident (resident-MiB), and the free pages kept dirty because
// their OS page holds a page in use (parked-MiB), averaged over the runs
// (-benchtime Nx: N seeds, the same N on every page size). No profile, no
// release timer, and one P (-cpu 1): the same calls on every page size.
func BenchmarkTrimResident(b *testing.B) {
	var ones [64 << 10]byte
	for i := range ones {
		ones[i] = 1
	}
	shapes := []struct {
		name     string
		min, max float64 // sizes are log-uniform in [min, max]
	}{
		{"small", 16, 4 << 10},
		{"mixed", 16, 1 << 20},
		{"large", 256 << 10, 4 << 20},
	}
	for _, sh := range shapes {
		b.Run("shape="+sh.name, func(b *testing.B) {
			var inuse, mapped, resident, parked uint64
			seed := uint64(0)
			for b.Loop() {
				h := newTestHeap(b, Options{ProfileBytes: -1, ReleaseDelay: time.Hour})
				seed++
				rng := rand.New(rand.NewPCG(seed, 2))
				size := func() int {
					return int(math.Exp(math.Log(sh.min) + rng.Float64()*(math.Log(sh.max)-math.Log(sh.min))))
				}
				alloc := func() []byte {
					bl := h.AllocUnzeroed(size())
					for i := 0; i < len(bl); i += len(ones) { // written, as a program's would be
						copy(bl[i:], ones[:])
					}
					return bl
				}
				var live [][]byte
				for n := 0; n < 32<<20; {
					live = append(live, alloc())
					n += len(live[len(live)-1])
				}
				for range 4 * len(live) {
					i := rng.IntN(len(live))
					h.Free(live[i])
					live[i] = alloc()
				}
				rng.Shuffle(len(live), func(i, j int) { live[i], live[j] = live[j], live[i] })
				for _, bl := range live[len(live)/4:] {
					h.Free(bl)
				}
				h.Trim()
				s := h.Stats()
				inuse += s.InUseBytes
				mapped += s.MappedBytes
				r, err := h.ResidentBytes()
				if err != nil {
					b.Fatal(err)
				}
				resident += r
				ph := &h.pages
				ph.Mu.Lock()
				for first, r := range ph.Free {
					for p := first; r.Parked && p < first+r.Pages; p++ {
						if *ph.Entry(p)&pageheap.PageDirty != 0 {
							parked += pageSize
						}
					}
				}
				ph.Mu.Unlock()
				h.Close()
			}
			mib := float64(b.N) * (1 << 20) // per run, averaged
			b.ReportMetric(float64(inuse)/mib, "inuse-MiB")
			b.ReportMetric(float64(mapped)/mib, "mapped-MiB")
			b.ReportMetric(float64(resident)/mib, "resident-MiB")
			b.ReportMetric(float64(parked)/mib, "parked-MiB")
		})
	}
}
