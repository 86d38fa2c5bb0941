package offheap

import (
	"runtime"
	"testing"

	"github.com/offheap/offheap/internal/pageheap"
)

// TestArenaBump: bump hands out a P's sub-chunk front to back, in the sizes
// asked for, and returns 0, changing nothing, where the sub-chunk is
// shorter than the request (a huge one included) or the P has no state.
func TestArenaBump(t *testing.T) {
	ps := new(arenaProcs)
	ps.n = 2
	ps.p[1] = arenaP{next: 0x10000, end: 0x10000 + 256}
	for i, want := range []uintptr{0x10000, 0x10010, 0x10040} {
		if x := ps.bump(1, []uintptr{16, 48, 64}[i]); x != want {
			t.Fatalf("bump %d: %#x, want %#x", i, x, want)
		}
	}
	for _, sz := range []uintptr{256 - 0x80 + 16, ^uintptr(0) &^ (arenaAlign - 1)} {
		if x := ps.bump(1, sz); x != 0 || ps.p[1].next != 0x10080 {
			t.Fatalf("bump of %#x bytes with 128 left: %#x, next %#x", sz, x, ps.p[1].next)
		}
	}
	if x := ps.bump(1, 128); x != 0x10080 || ps.p[1].next != ps.p[1].end {
		t.Fatalf("bump of the last 128 bytes: %#x, next %#x", x, ps.p[1].next)
	}
	for _, pid := range []int{0, 2, maxProcs} { // no sub-chunk; no state
		if x := ps.bump(pid, 16); x != 0 {
			t.Fatalf("bump on P %d: %#x", pid, x)
		}
	}
}

// TestArenaAllocBumps: Alloc and allocFast (TryAlloc's) bump the P's
// sub-chunk through bump: on one P, alternating the two, each allocation
// starts where the last one ended, rounded up to 16, except where a refill
// starts a new sub-chunk.
func TestArenaAllocBumps(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	h := newTestHeap(t, Options{})
	a := h.NewArena()
	defer a.Release()
	var end uintptr // where the last allocation ended
	total, breaks := 0, 0
	for i := range 20_000 {
		n := 1 + i*7%arenaFastMax
		var b []byte
		if i%2 == 0 {
			b = a.Alloc(n)
		} else {
			var err error
			if b, err = a.TryAlloc(n); err != nil {
				t.Fatal(err)
			}
		}
		if addrOf(b) != end {
			breaks++
		}
		end = addrOf(b) + pageheap.AlignUp(uintptr(n), arenaAlign)
		total += n
	}
	// A refill drops at most arenaFastMax bytes of the sub-chunk it leaves.
	if most := total/(arenaSub-arenaFastMax) + 2; breaks > most {
		t.Fatalf("%d allocations started away from the last one's end, want at most %d (the refills)", breaks, most)
	}
}
