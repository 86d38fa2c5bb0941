package offheap

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"
	"unsafe"
)

// BenchmarkRefBytes measures what Bytes costs next to the map lookup that
// finds the Ref, with the arms interleaved in rounds of refRound operations
// inside one benchmark run, so that they share every condition of the
// machine:
//
//   - null: read the next key and add it up (the loop and its loads);
//   - map-hit: look a key up in a map[uint64]Ref of all the values;
//   - bytes: call Bytes on the next Ref of a []Ref, which is what follows
//     the lookup (the Ref is in hand), and add up the slice's pointer and
//     length without touching its bytes.
//
// It reports each arm's ns per operation and bytes/map-hit, the ratio the
// design must keep at or below 1/4. Run:
//
//	go test -run '^$' -bench RefBytes -count 6 .
func BenchmarkRefBytes(b *testing.B) {
	for _, n := range []int{1 << 10, 1 << 16, 1 << 20} {
		b.Run(fmt.Sprintf("values=%d", n), func(b *testing.B) {
			h := newTestHeap(b, Options{})
			rng := rand.New(rand.NewPCG(1, 2))
			keys := make([]uint64, n)
			refs := make([]Ref, n)
			m := make(map[uint64]Ref, n)
			for i := range keys {
				keys[i] = rng.Uint64()
				refs[i] = h.Ref(h.Alloc(32))
				m[keys[i]] = refs[i]
			}
			mask := n - 1
			var arm [3]time.Duration
			var sink uint64
			b.ResetTimer()
			for done, j := 0, 0; done < b.N; done += refRound {
				k := min(refRound, b.N-done)
				t0 := time.Now()
				for i := range k {
					sink += keys[(j+i)&mask]
				}
				t1 := time.Now()
				for i := range k {
					sink += m[keys[(j+i)&mask]].n
				}
				t2 := time.Now()
				for i := range k {
					v := h.Bytes(refs[(j+i)&mask])
					sink += uint64(uintptr(unsafe.Pointer(unsafe.SliceData(v)))) + uint64(len(v))
				}
				t3 := time.Now()
				arm[0] += t1.Sub(t0)
				arm[1] += t2.Sub(t1)
				arm[2] += t3.Sub(t2)
				j += k
			}
			b.StopTimer()
			refSink = sink
			per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(b.N) }
			b.ReportMetric(per(arm[0]), "null-ns/op")
			b.ReportMetric(per(arm[1]), "map-hit-ns/op")
			b.ReportMetric(per(arm[2]), "bytes-ns/op")
			b.ReportMetric(per(arm[2])/per(arm[1]), "bytes/map-hit")
			for _, r := range refs {
				h.Free(h.Bytes(r))
			}
		})
	}
}

// refRound is how many operations each arm of BenchmarkRefBytes runs before
// the next takes its turn: enough that reading the clock costs nothing.
const refRound = 4096

var refSink uint64

// BenchmarkGCIndex measures what a forced garbage collection costs while
// the program indexes 1M values of 64 bytes in a Go map from uint64 keys:
//
//   - null: no map (the test binary's own heap);
//   - make: map[uint64][]byte, the values from make;
//   - offheap-slices: map[uint64][]byte, the values from a Heap;
//   - ref: map[uint64]Ref, the values from a Heap.
//
// The arms take turns within one benchmark run: each round builds every
// arm's map in turn (in a rotating order), times gcIndexGCs forced
// collections with it live, keeps the fastest, and drops the map before the
// next arm. It reports the median over rounds of each arm's time per GC, and
// ref/offheap-slices, which the design must keep at or below 1/3. Each round
// takes a few seconds; run:
//
//	go test -run '^$' -bench GCIndex -benchtime 5x .
func BenchmarkGCIndex(b *testing.B) {
	const n, size = 1 << 20, 64
	h := newTestHeap(b, Options{})
	keys := make([]uint64, n)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range keys {
		keys[i] = rng.Uint64()
	}
	arms := []struct {
		name  string
		build func() (drop func())
	}{
		{"null", func() func() { return func() {} }},
		{"make", func() func() {
			m := make(map[uint64][]byte, n)
			for _, k := range keys {
				m[k] = make([]byte, size)
			}
			return func() { gcIndexSink = len(m) }
		}},
		{"offheap-slices", func() func() {
			m := make(map[uint64][]byte, n)
			for _, k := range keys {
				m[k] = h.Alloc(size)
			}
			return func() {
				for _, v := range m {
					h.Free(v)
				}
			}
		}},
		{"ref", func() func() {
			m := make(map[uint64]Ref, n)
			for _, k := range keys {
				m[k] = h.Ref(h.Alloc(size))
			}
			return func() {
				for _, r := range m {
					h.Free(h.Bytes(r))
				}
			}
		}},
	}
	perGC := make([][]time.Duration, len(arms))
	b.ResetTimer()
	for round := range b.N {
		for i := range arms {
			a := (round + i) % len(arms)
			drop := arms[a].build()
			runtime.GC() // the build's garbage
			fastest := time.Duration(1<<63 - 1)
			for range gcIndexGCs {
				t0 := time.Now()
				runtime.GC()
				fastest = min(fastest, time.Since(t0))
			}
			perGC[a] = append(perGC[a], fastest)
			drop() // keeps the map live until here
			runtime.GC()
		}
	}
	b.StopTimer()
	med := make([]float64, len(arms))
	for a := range arms {
		slices.Sort(perGC[a])
		med[a] = float64(perGC[a][len(perGC[a])/2].Microseconds()) / 1000
		b.ReportMetric(med[a], arms[a].name+"-ms/gc")
	}
	b.ReportMetric(med[3]/med[2], "ref/offheap-slices")
	b.ReportMetric(med[3]/med[1], "ref/make")
	if s := h.Stats(); s.LiveBlocks != 0 {
		b.Fatalf("%d live blocks after the rounds", s.LiveBlocks)
	}
}

// gcIndexGCs is how many collections BenchmarkGCIndex times per arm and
// round.
const gcIndexGCs = 3

var gcIndexSink int
