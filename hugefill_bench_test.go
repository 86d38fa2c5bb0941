package offheap

import (
	"math/rand/v2"
	"testing"
	"time"
)

// BenchmarkHugePlacement measures what the placement by huge pages is for
// (internal/pageheap/hugefill.go): a 256 MiB heap with HugePages of blocks of 1 KiB to 3 MiB
// (the same bytes in each of six sizes, spans of small blocks and runs of
// their own), written whole and collapsed, three times frees a random half and allocates
// as many bytes again, then frees a random half. Then the release timer
// fires (not Trim), and the collapse pass runs. Metrics: partial-ranges,
// the 2 MiB ranges with some but not all pages allocated (neither given
// back whole nor free to collapse without holding free pages);
// resident-MiB after the timer; huge-pct, the share of the resident memory
// on huge pages after the pass (0 where the kernel makes none). The time is
// the churn's. It reads only the pagemap and the public figures, so that
// the same file measures any version of the page heap.
func BenchmarkHugePlacement(b *testing.B) {
	if raceEnabled || buildChecked {
		b.Skip("a race or checked build's heap is not the one measured")
	}
	var partial, resident, huge float64
	for range b.N {
		b.StopTimer()
		now := int64(0)
		h, err := NewHeap(Options{HugePages: true, ProfileBytes: -1, ReleaseDelay: time.Minute})
		if err != nil {
			b.Fatal(err)
		}
		h.setClock(func() int64 { return now })
		rnd := rand.New(rand.NewPCG(7, 8))
		sizes := []int{1 << 10, 8 << 10, 48 << 10, 256<<10 + 1, 1 << 20, 3 << 20}
		var live [][]byte
		fill := func(bytes int) {
			for got := 0; got < bytes; {
				n := sizes[rnd.IntN(len(sizes))]
				x := h.AllocUnzeroed(n)
				touch(x)
				live = append(live, x)
				got += n
			}
		}
		freeHalf := func() int {
			freed := 0
			rnd.Shuffle(len(live), func(i, j int) { live[i], live[j] = live[j], live[i] })
			for _, x := range live[len(live)/2:] {
				freed += len(x)
				h.Free(x)
			}
			live = live[:len(live)/2]
			return freed
		}
		fill(256 << 20)
		h.collapseNow() // as the background pass would, after a lull
		b.StartTimer()
		for range 3 {
			fill(freeHalf())
		}
		freeHalf()
		b.StopTimer()
		now += int64(time.Hour)
		h.fireReleaseTimer()
		partial += float64(partialRanges(h))
		r, _ := h.ResidentBytes()
		resident += float64(r) / (1 << 20)
		h.collapseNow()
		hb, _ := h.HugePageBytes()
		r, _ = h.ResidentBytes()
		if r > 0 {
			huge += 100 * float64(hb) / float64(r)
		}
		h.Close()
	}
	b.ReportMetric(partial/float64(b.N), "partial-ranges")
	b.ReportMetric(resident/float64(b.N), "resident-MiB")
	b.ReportMetric(huge/float64(b.N), "huge-pct")
}

// partialRanges counts the 2 MiB ranges of h's regions with some but not
// all of their pages allocated, from the pagemap.
func partialRanges(h *Heap) int {
	ph := &h.pages
	ph.Mu.Lock()
	defer ph.Mu.Unlock()
	n := 0
	for _, r := range ph.Regions.Load().ByPage {
		for k := r.Base; k+2<<20 <= r.Base+r.Bytes; k += 2 << 20 {
			used := 0
			p, _ := ph.PageOf(k)
			for i := range uint32(2 << 20 >> pageShift) {
				if uint8(*ph.Entry(p + i)) != 0 {
					used++
				}
			}
			if used > 0 && used < 2<<20>>pageShift {
				n++
			}
		}
	}
	return n
}

// BenchmarkPageChurn is the page heap's cost per run: 256 large blocks of
// 260 KiB to 3 MiB live, each op frees one at random and allocates one of a
// random size, untouched, with HugePages off and on (where the placement by
// huge pages does its work); mapped-MiB is the heap's mapped memory at
// the end.
func BenchmarkPageChurn(b *testing.B) {
	for _, huge := range []bool{false, true} {
		b.Run(map[bool]string{false: "huge=off", true: "huge=on"}[huge], func(b *testing.B) {
			h := newTestHeap(b, Options{HugePages: huge, ProfileBytes: -1})
			rnd := rand.New(rand.NewPCG(3, 4))
			size := func() int { return 260<<10 + rnd.IntN(3<<20-260<<10) }
			live := make([][]byte, 256)
			for i := range live {
				live[i] = h.AllocUnzeroed(size())
			}
			b.ResetTimer()
			for range b.N {
				i := rnd.IntN(len(live))
				h.Free(live[i])
				live[i] = h.AllocUnzeroed(size())
			}
			b.StopTimer()
			b.ReportMetric(float64(h.Stats().MappedBytes)/(1<<20), "mapped-MiB")
			for _, x := range live {
				h.Free(x)
			}
		})
	}
}
