package offheap

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/offheap/offheap/internal/pageheap"
)

// writePattern writes seed's pattern into b, whatever b held (arena_test.go's fillPattern wants it zero).
func writePattern(b []byte, seed byte) {
	for i := range b {
		b[i] = byte(i>>9) ^ byte(i) ^ seed
	}
}

// findPatternMiss reports the first byte of b that writePattern(b, seed) did not
// write, or -1.
func findPatternMiss(b []byte, seed byte) int {
	for i := range b {
		if b[i] != byte(i>>9)^byte(i)^seed {
			return i
		}
	}
	return -1
}

// wantRealloc checks that nb, Realloc(short, n)'s result, holds short's
// bytes as writePattern(seed) wrote them and zeros after.
func wantRealloc(t *testing.T, what string, nb []byte, k, n int, seed byte) {
	t.Helper()
	if len(nb) != n || cap(nb) != n {
		t.Fatalf("%s: len %d cap %d, want %d", what, len(nb), cap(nb), n)
	}
	k = min(k, n)
	if i := findPatternMiss(nb[:k], seed); i >= 0 {
		t.Fatalf("%s: byte %d of the %d kept is %#x", what, i, k, nb[i])
	}
	if i := bytes.IndexFunc(nb[k:], func(r rune) bool { return r != 0 }); i >= 0 {
		t.Fatalf("%s: byte %d (past the %d kept) is not zero", what, k+i, k)
	}
}

// TestReallocLargeInPlace: a large block grows in place into the free pages
// after it and into the frontier, and shrinks in place, its tail given back
// to the system at once: due at once for the release timer, whose pass
// (run here, as when it fires) gives it back an hour before ReleaseDelay
// would, without a Trim. The bytes past len(b) that the block held are zero
// afterwards, as are dirty pages it takes. Positive control: with the tail
// freed as Free frees (due a ReleaseDelay later),
//
//	realloc_pages_test.go:92: shrinking 5 MiB to 1 MiB+1 gave back 0 bytes, want 4186112 at once
func TestReallocLargeInPlace(t *testing.T) {
	if buildChecked {
		t.Skip("checked mode copies every Realloc, so that a stale use of the old block is caught")
	}
	h := newTestHeap(t, Options{ProfileBytes: -1, ReleaseDelay: time.Hour})
	if raceEnabled {
		// The first region holds 4 MiB (internal/pageheap/region_race.go): fill it, so that
		// the blocks below share the next one.
		defer h.Free(h.Alloc(4 << 20))
	}
	// The frontier: nothing after the block.
	b := h.Alloc(1 << 20)
	writePattern(b, 1)
	nb := h.Realloc(b[:1000], 3<<20)
	if addrOf(nb) != addrOf(b) {
		t.Fatalf("Realloc at the frontier moved the block")
	}
	wantRealloc(t, "grow at the frontier", nb, 1000, 3<<20, 1)
	// Free pages after it, dirty: a block after it filled and freed.
	writePattern(nb, 2)
	after := h.Alloc(2 << 20)
	writePattern(after, 3)
	fence := h.Alloc(maxSmall + 1) // keeps the frontier away
	h.Free(after)
	gb := h.Realloc(nb, 5<<20)
	if addrOf(gb) != addrOf(nb) {
		t.Fatalf("Realloc into the free pages after the block moved it")
	}
	wantRealloc(t, "grow into dirty free pages", gb, 3<<20, 5<<20, 2)
	// Shrink: the tail goes back at once.
	mapped := h.Stats().MappedBytes
	sb := h.Realloc(gb, 1<<20+1)
	if addrOf(sb) != addrOf(gb) {
		t.Fatalf("shrinking moved the block")
	}
	wantRealloc(t, "shrink", sb, 1<<20+1, 1<<20+1, 2)
	h.pages.OnTimer() // the timer's pass, which releaseSoon fired
	// Whole OS pages go back: the one the new end is in stays (internal/pageheap/ospage.go).
	if got, want := mapped-h.Stats().MappedBytes, uint64(5<<20-pageheap.AlignUp(1<<20+pageSize, pageheap.OSPageBytes)); got != want {
		t.Fatalf("shrinking 5 MiB to 1 MiB+1 gave back %d bytes, want %d at once", got, want)
	}
	inUse := h.Stats().InUseBytes
	h.Free(sb)
	h.Free(fence)
	if freed := inUse - h.Stats().InUseBytes; freed != uint64(1<<20+pageSize+maxSmall+pageSize) {
		t.Fatalf("freeing the shrunk block and the fence freed %d bytes, want %d", freed, 1<<20+pageSize+maxSmall+pageSize)
	}
}

// moveTestHeap is a heap whose large Reallocs may move pages, or skips t:
// not in checked mode (which copies every Realloc, so that a stale use of
// the old block is caught), nor where the regions are Go memory (race
// builds) or mincore does not answer for moved pages (qemu-user).
func moveTestHeap(t *testing.T) *Heap {
	t.Helper()
	if buildChecked {
		t.Skip("checked mode copies every Realloc, so that a stale use of the old block is caught")
	}
	skipRace(t, "regions are Go memory, and Realloc copies")
	skipQemuUser(t, "its mincore refuses the range mremap moved pages from (ENOMEM)")
	return newTestHeap(t, Options{ProfileBytes: -1, ReleaseDelay: time.Hour})
}

// TestReallocMovesPages: a large block that cannot grow in place moves to
// a new run with its pages, not its bytes: resident memory grows by far less
// than the block, and the old run's pages come back clean. Positive
// control: with pageheap.MovePages returning an error (the copy path), resident
// memory grew by the block's 8 MiB and this test failed:
//
//	realloc_pages_test.go:142: moving 8 MiB made 8388608 bytes resident
func TestReallocMovesPages(t *testing.T) {
	h := moveTestHeap(t)
	const size = 8 << 20
	b := h.Alloc(size)
	writePattern(b, 7)
	fence := h.Alloc(maxSmall + 1) // right after b: no growth in place
	before, err := h.ResidentBytes()
	if err != nil {
		t.Fatal(err)
	}
	nb := h.Realloc(b, 2*size)
	if addrOf(nb) == addrOf(b) {
		t.Fatalf("Realloc grew the block in place, past the block after it")
	}
	after, err := h.ResidentBytes()
	if err != nil {
		t.Fatal(err)
	}
	if grew := int64(after) - int64(before); grew > 1<<20 {
		t.Fatalf("moving 8 MiB made %d bytes resident", grew)
	}
	wantRealloc(t, "moved", nb, size, 2*size, 7)
	if st := h.Stats(); st.MappedBytes > uint64(2*size+maxSmall+2*pageSize) {
		t.Fatalf("after the move %d bytes mapped: the old run's pages still count", st.MappedBytes)
	}
	// The old run reads as zeros to its next owner without a clear.
	old := h.Alloc(size)
	if addrOf(old) != addrOf(b) {
		t.Logf("the old run was not reused (%#x, was %#x)", addrOf(old), addrOf(b))
	}
	wantRealloc(t, "the old run, allocated again", old, 0, size, 0)
	h.Free(old)
	h.Free(nb)
	h.Free(fence)
}

// TestReallocCopiesOntoResident: a large block that moves onto a run whose
// pages are in memory already (a block just freed there, written whole) is
// copied, not moved with mremap, which would free each of those pages
// before it moved one in: the old run's pages go to the free set dirty, as
// Free's, where moved pages go back clean (TestReallocMovesPages). Positive
// control: with moveOnto always true,
//
//	realloc_pages_test.go:183: Realloc onto resident pages moved them: 8388608 bytes released
func TestReallocCopiesOntoResident(t *testing.T) {
	h := moveTestHeap(t)
	const size = 8 << 20
	d := h.Alloc(2 * size)
	writePattern(d, 3) // resident, and dirty once freed
	b := h.Alloc(size)
	writePattern(b, 7)
	fence := h.Alloc(maxSmall + 1) // right after b: no growth in place
	h.Free(d)
	mapped := h.Stats().MappedBytes
	nb := h.ReallocUnzeroed(b, 2*size)
	if addrOf(nb) != addrOf(d) {
		t.Skipf("the block moved to %#x, not onto the freed run at %#x", addrOf(nb), addrOf(d))
	}
	wantRealloc(t, "copied", nb[:size:size], size, size, 7)
	if st := h.Stats(); st.MappedBytes != mapped {
		t.Fatalf("Realloc onto resident pages moved them: %d bytes released", int64(mapped)-int64(st.MappedBytes))
	}
	h.Free(nb)
	h.Free(fence)
}

// TestReallocLargeSizes resizes large blocks between sizes around moveMin
// and the page boundaries, with short slices (whose block's bytes past len
// must not survive, moved or not), into fresh and dirty runs, in a fast
// heap, a profiled one (whose samples resize and move too) and one with
// guard-page samples, with Realloc and (a third of them) ReallocUnzeroed;
// every block is accounted for at the end and the profile agrees.
func TestReallocLargeSizes(t *testing.T) {
	sizes := []int{1000, maxSmall + 1, 3*pageSize + 1, moveMin - 1, moveMin, moveMin + pageSize + 3, 1 << 20, 3<<20 + 5}
	for _, opts := range []Options{
		{ProfileBytes: -1},
		{ProfileBytes: 1 << 10},
		{GuardOneIn: 3, ProfileBytes: -1},
		{ReleaseDelay: -1},
	} {
		t.Run(fmt.Sprintf("%+v", opts), func(t *testing.T) {
			h := newTestHeap(t, opts)
			var fences [][]byte
			for i, from := range sizes {
				for j, to := range sizes {
					seed := byte(i*len(sizes) + j)
					b := h.Alloc(from)
					writePattern(b, seed)
					if (i+j)%2 == 0 {
						fences = append(fences, h.Alloc(maxSmall+1)) // no growth in place
					}
					// Dirty pages to land on: a freed block's.
					d := h.Alloc(to)
					writePattern(d, 0xff)
					h.Free(d)
					k := from - from/3
					if (i+j)%3 == 0 { // the bytes past k are unspecified
						nb := h.ReallocUnzeroed(b[:k], to)
						if len(nb) != to || cap(nb) != to {
							t.Fatalf("ReallocUnzeroed(%d of %d, %d): len %d cap %d", k, from, to, len(nb), cap(nb))
						}
						m := min(k, to)
						wantRealloc(t, fmt.Sprintf("ReallocUnzeroed(%d of %d, %d)", k, from, to), nb[:m:m], m, m, seed)
						h.Free(nb)
						continue
					}
					nb := h.Realloc(b[:k], to)
					wantRealloc(t, fmt.Sprintf("Realloc(%d of %d, %d)", k, from, to), nb, k, to, seed)
					writePattern(nb, seed) // the whole block is the caller's
					h.Free(nb)
				}
			}
			for _, f := range fences {
				h.Free(f)
			}
			st := h.Stats()
			if st.Allocs != st.Frees || st.InUseBytes != 0 {
				t.Fatalf("after freeing everything: %d Allocs, %d Frees, %d bytes in use", st.Allocs, st.Frees, st.InUseBytes)
			}
			if err := h.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}
