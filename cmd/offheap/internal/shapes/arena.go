package shapes

import (
	"fmt"
	"runtime"
	"time"

	"github.com/offheap/offheap"
	"github.com/offheap/offheap/cmd/offheap/internal/bench"
)

func init() {
	bench.RegisterWayShape(bench.WayShape{
		Spec: bench.Spec{
			Name:     "arena",
			Doc:      "16-256 B allocations from one Arena shared by all workers, against heap pairs, make and a null loop",
			Work:     bench.FixedTotal,
			Quick:    true,
			Order:    100,
			Unit:     "alloc",
			Workers:  []int{1, 2, 4},
			Verdicts: arenaVerdicts,
			Scaling:  0.65, // arena-t2/t1's target
		},
		Ways: []bench.Way{
			{Name: "arena", Doc: "one Arena shared by all workers, in 830 KiB rounds, each followed by a Reset, all timed", Run: arenaWay(runArenaWay)},
			{Name: "heap-pair", Doc: "offheap Alloc+Free pairs on a heap of the trial's own", Run: arenaWay(runArenaHeapPair)},
			{Name: "go-make", Doc: "make, each slice kept alive in a sink until the next", Run: arenaWay(runArenaMake)},
			{Name: "null", Doc: "the arena way's loop and rounds handing out consecutive pieces of a worker's own buffer", Run: arenaWay(runArenaNull)},
		},
	})
}

// arenaSizes are the request sizes every way cycles through, each worker
// from its own starting point. All are multiples of 16, so an arena hands
// out exactly their sum. Its length is a power of two: the workers index it
// with a mask. Read-only and shared by every worker.
var arenaSizes = [...]int{16, 32, 48, 64, 96, 128, 192, 256}

// arenaRound is how many allocations the arena way makes per round between
// Resets: about 830 KiB at the sizes' mean of 104 B, the arena of a large
// request, which fits in a core's L2 cache. The rounds run back to back on
// workers that stay running (bench.Rounds): at 13 MiB per round and a fresh
// start for each, the shape measured waking the second worker's P; at 27
// MiB, the machine's memory bandwidth, which two cores share (0.7-0.95 of
// the time at one worker where the compute control took 0.5).
const arenaRound = 1 << 13

// arenaSink is one worker's slot for the go-make way's last slice: storing
// it there makes every make escape to the heap, and the padding keeps the
// workers' stores off each other's cache lines.
type arenaSink struct {
	b []byte
	_ [104]byte
}

// arenaWay runs one way of the arena shape with its total of allocations.
func arenaWay(run func(t *bench.Trial, total int) (bench.Sample, error)) func(t *bench.Trial) (bench.Sample, error) {
	return func(t *bench.Trial) (bench.Sample, error) { return run(t, t.Size(8_000_000, 40_000_000)) }
}

// runArenaWay allocates from one arena that every worker shares, in rounds
// of at most arenaRound allocations with a Reset after each, all timed: the
// Reset is the arena's way to free. A warm round, untimed, takes the
// arena's chunks from the heap first. Each round's census is checked against
// the arena's Stats: it must have handed out exactly the bytes the workers
// asked for.
func runArenaWay(t *bench.Trial, total int) (bench.Sample, error) {
	h, err := offheap.NewHeap(offheap.Options{ReleaseDelay: -1})
	if err != nil {
		return bench.Sample{}, err
	}
	a := h.NewArena()
	rounds := (total + arenaRound - 1) / arenaRound
	roundOps := func(r int) int { return min(arenaRound, total-r*arenaRound) }
	var census error
	run := func(rounds int) time.Duration {
		return bench.Rounds(t.Workers, rounds, func(w, r int) {
			a, sizes := a, &arenaSizes
			j := w
			for i := range bench.Split(roundOps(r), t.Workers, w) {
				b := a.Alloc(sizes[j&(len(sizes)-1)])
				b[0] = byte(i)
				j++
			}
		}, func(r int) {
			var want uint64
			for w := range t.Workers {
				want += arenaBytes(w, bench.Split(roundOps(r), t.Workers, w))
			}
			if got := a.Stats().AllocBytes; got != want && census == nil {
				census = fmt.Errorf("arena census: %d bytes handed out, the workers asked for %d", got, want)
			}
			a.Reset()
		})
	}
	run(1) // warm: the chunks
	el := run(rounds)
	a.Release()
	if census != nil {
		h.Close()
		return bench.Sample{}, census
	}
	if st := h.Stats(); st.InUseBytes != 0 {
		h.Close()
		return bench.Sample{}, fmt.Errorf("census: %d bytes still in use after Arena.Release", st.InUseBytes)
	}
	if err := h.Close(); err != nil {
		return bench.Sample{}, err
	}
	return bench.Sample{Ops: int64(total), Elapsed: el}, nil
}

// arenaBytes is what worker w asks an arena for in n allocations: the sizes
// from its starting point w on, cycling.
func arenaBytes(w, n int) uint64 {
	var cycle uint64
	for _, s := range arenaSizes {
		cycle += uint64(s)
	}
	sum := uint64(n/len(arenaSizes)) * cycle
	for j := range n % len(arenaSizes) {
		sum += uint64(arenaSizes[(w+j)%len(arenaSizes)])
	}
	return sum
}

// runArenaHeapPair makes the same allocations as offheap Alloc+Free pairs,
// on a heap of its own.
func runArenaHeapPair(t *bench.Trial, total int) (bench.Sample, error) {
	h, err := offheap.NewHeap(offheap.Options{ReleaseDelay: -1})
	if err != nil {
		return bench.Sample{}, err
	}
	before := h.Stats().Allocs
	el := bench.Parallel(t.Workers, func(w int) {
		h, sizes := h, &arenaSizes
		j := w
		for i := range bench.Split(total, t.Workers, w) {
			b := h.Alloc(sizes[j&(len(sizes)-1)])
			b[0] = byte(i)
			h.Free(b)
			j++
		}
	})
	st := h.Stats()
	if st.Allocs-before != uint64(total) || st.InUseBytes != 0 {
		h.Close()
		return bench.Sample{}, fmt.Errorf("census: %d allocations counted (want %d), %d bytes in use after freeing all",
			st.Allocs-before, total, st.InUseBytes)
	}
	if err := h.Close(); err != nil {
		return bench.Sample{}, err
	}
	return bench.Sample{Ops: int64(total), Elapsed: el}, nil
}

// runArenaMake makes the same allocations with make, each kept in the
// worker's sink until the next replaces it, and left to the collector.
func runArenaMake(t *bench.Trial, total int) (bench.Sample, error) {
	sinks := make([]arenaSink, t.Workers)
	el := bench.Parallel(t.Workers, func(w int) {
		sink, sizes := &sinks[w], &arenaSizes
		j := w
		for i := range bench.Split(total, t.Workers, w) {
			b := make([]byte, sizes[j&(len(sizes)-1)])
			b[0] = byte(i)
			sink.b = b
			j++
		}
	})
	runtime.KeepAlive(sinks)
	return bench.Sample{Ops: int64(total), Elapsed: el}, nil
}

// runArenaNull is the arena way's loop and rounds with no allocator: each
// worker hands out consecutive pieces of a buffer of its own, as large as
// its share of a round, from the front again every round, and nothing runs
// between rounds. So it walks through as much memory as the arena does,
// the same way, without the arena's work (its atomics, its chunks, its
// zeroing). Its scaling is the most the arena way can show on this machine
// in this run: the round barriers are in it, and the memory traffic, which a
// second vCPU on the same core as the first does not double.
func runArenaNull(t *bench.Trial, total int) (bench.Sample, error) {
	bufs := make([][]byte, t.Workers)
	for w := range bufs {
		// Each its own allocation of more than 32 KiB: its own pages.
		bufs[w] = make([]byte, arenaBytes(w, bench.Split(arenaRound, t.Workers, w))+pageBytes)
	}
	rounds := (total + arenaRound - 1) / arenaRound
	el := bench.Rounds(t.Workers, rounds, func(w, r int) {
		buf, sizes := bufs[w], &arenaSizes
		j, off := w, 0
		for i := range bench.Split(min(arenaRound, total-r*arenaRound), t.Workers, w) {
			n := sizes[j&(len(sizes)-1)]
			b := buf[off : off+n : off+n]
			b[0] = byte(i)
			off += n
			j++
		}
	}, nil)
	runtime.KeepAlive(bufs)
	return bench.Sample{Ops: int64(total), Elapsed: el}, nil
}

// pageBytes pads a null worker's buffer so that no two share a page.
const pageBytes = 8 << 10

// arenaVerdicts judges the arena against make and against heap pairs at one
// worker, and its scaling from 1 worker to 2.
func arenaVerdicts(r *bench.Report) []bench.Verdict {
	var vs []bench.Verdict
	vs = append(vs,
		needsIdleCore(oneWorker(r, "arena-make", "16-256 B, 1 worker: Arena.Alloc / make",
			"arena", "", "arena", "go-make", 0.25), r, makeIdleCore),
		oneWorker(r, "arena-heap", "16-256 B, 1 worker: Arena.Alloc / offheap Alloc+Free pair",
			"arena", "", "arena", "heap-pair", 0.5))

	const (
		name   = "arena-t2/t1"
		figure = "16-256 B, fixed total: time at 2 workers / time at 1, one Arena shared by both"
		target = "<= 0.65"
		limit  = 0.65
	)
	one, why := find(r, "arena", "", "arena", 1)
	two, why2 := find(r, "arena", "", "arena", 2)
	if one == nil || two == nil {
		return append(vs, bench.Skip(name, figure, target, missing(why, why2)))
	}
	v := two.MinNs / one.MinNs
	return append(vs, scalingAtMost(bench.Verdict{Name: name, Figure: figure, Target: target, Value: v,
		Measured: fmt.Sprintf("%.2f", v)}, limit, r, "arena", "", "null", 2, one, two))
}
