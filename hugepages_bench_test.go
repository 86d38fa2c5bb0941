package offheap

import (
	"slices"
	"testing"
	"time"
	"unsafe"
)

// BenchmarkHugePagesFresh is what HugePages promises a program that turns
// it on for speed: a freshly allocated 1 GiB block, written whole, is never
// slower to read at random than the same block of a heap without
// HugePages, from the moment the writing ends. The two arms live in one
// process: a heap with HugePages and one without, each with one 1 GiB
// block, allocated and written one after the other (plain first), then read
// at random in alternating batches of 20,000 8-byte reads (either arm
// first, by turns), in 2 s windows: hugeWindows of them (30 s) and then
// lateWindows more. A window's ratio is the median of its batch pairs'
// (time with HugePages / time without), which a burst of other load on
// this shared machine moves less than a sum would. Metrics:
// worst-ratio and median-ratio, the slowest and the median window of the
// first 30 s; late-ratio, the median
// of the windows after; huge-pct-end and huge-pct-30s, the share of the
// block on huge pages when the writing ends and after 30 s (HugePageBytes);
// write-ratio, Alloc and writing with HugePages / without. Run it by hand,
// once, on a machine with 2 GiB to spare (docs/DESIGN.md, Huge pages
// without stalls):
//
//	go test -run '^$' -bench HugePagesFresh -benchtime 1x -v .
func BenchmarkHugePagesFresh(b *testing.B) {
	if raceEnabled || buildChecked {
		b.Skip("a race or checked build's heap is not the one measured")
	}
	const (
		size        = 1 << 30
		batch       = 20_000
		window      = 2 * time.Second
		hugeWindows = 15
		lateWindows = 3
	)
	var worst, median, late, hugeEnd, huge30, write float64
	for range b.N {
		b.StopTimer()
		on := newTestHeap(b, Options{HugePages: true, ProfileBytes: -1})
		off := newTestHeap(b, Options{ProfileBytes: -1})
		if !on.pages.Huge.On {
			b.Skip("no 2 MiB transparent huge pages on this system")
		}
		fill := func(h *Heap) ([]byte, time.Duration) {
			t := time.Now()
			x := h.Alloc(size)
			touch(x)
			return x, time.Since(t)
		}
		xo, to := fill(off)
		xh, th := fill(on)
		write += float64(th) / float64(to)
		pct := func() float64 {
			n, err := on.HugePageBytes()
			if err != nil {
				b.Fatal(err)
			}
			return 100 * float64(n) / size
		}
		hugeEnd += pct()
		seed := uint64(88172645463325252)
		read := func(x []byte) time.Duration {
			p, m, s := unsafe.Pointer(&x[0]), uint64(len(x)/8-1), seed
			var sum uint64
			t := time.Now()
			for range batch {
				s ^= s << 13
				s ^= s >> 7
				s ^= s << 17
				sum += *(*uint64)(unsafe.Add(p, (s&m)*8))
			}
			d := time.Since(t)
			seed = s + sum&1 // keeps the loads
			return d
		}
		var ratios []float64
		b.StartTimer()
		for w := range hugeWindows + lateWindows {
			var pairs []float64
			for end := time.Now().Add(window); time.Now().Before(end); {
				var dh, do time.Duration
				if len(pairs)%2 == 0 { // either arm first, by turns
					dh, do = read(xh), read(xo)
				} else {
					do, dh = read(xo), read(xh)
				}
				pairs = append(pairs, float64(dh)/float64(do))
			}
			slices.Sort(pairs)
			ratios = append(ratios, pairs[len(pairs)/2])
			b.Logf("window %2d: %.2fx, %.0f%% on huge pages", w, ratios[w], pct())
			if w == hugeWindows-1 {
				huge30 += pct()
			}
		}
		b.StopTimer()
		first := slices.Clone(ratios[:hugeWindows])
		slices.Sort(first)
		worst += first[len(first)-1]
		median += first[len(first)/2]
		after := slices.Clone(ratios[hugeWindows:])
		slices.Sort(after)
		late += after[len(after)/2]
		on.Free(xh)
		off.Free(xo)
		on.Close()
		off.Close()
	}
	n := float64(b.N)
	b.ReportMetric(worst/n, "worst-ratio")
	b.ReportMetric(median/n, "median-ratio")
	b.ReportMetric(late/n, "late-ratio")
	b.ReportMetric(hugeEnd/n, "huge-pct-end")
	b.ReportMetric(huge30/n, "huge-pct-30s")
	b.ReportMetric(write/n, "write-ratio")
}

// BenchmarkHugePagesGrow is what a program growing a table with Realloc
// pays, with HugePages off and on: a 1 MiB block, written, doubled by
// Realloc up to 256 MiB, each new half written after its Realloc (the
// program's first touch of it). Metrics: realloc-ms, the Reallocs alone;
// total-ms, the Reallocs and the writes; per sequence.
//
//	go test -run '^$' -bench HugePagesGrow -count 4 .
func BenchmarkHugePagesGrow(b *testing.B) {
	if raceEnabled || buildChecked {
		b.Skip("a race or checked build's heap is not the one measured")
	}
	for _, huge := range []bool{false, true} {
		b.Run(map[bool]string{false: "huge=off", true: "huge=on"}[huge], func(b *testing.B) {
			var re, all time.Duration
			for range b.N {
				h := newTestHeap(b, Options{HugePages: huge, ProfileBytes: -1})
				x := h.Alloc(1 << 20)
				touch(x)
				for n := 2 << 20; n <= 256<<20; n *= 2 {
					t0 := time.Now()
					x = h.Realloc(x, n)
					t1 := time.Now()
					touch(x[n/2:])
					re += t1.Sub(t0)
					all += time.Since(t0)
				}
				h.Free(x)
				h.Close()
			}
			b.ReportMetric(float64(re.Milliseconds())/float64(b.N), "realloc-ms")
			b.ReportMetric(float64(all.Milliseconds())/float64(b.N), "total-ms")
		})
	}
}
