package offheap

import (
	"bytes"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"

	"github.com/offheap/offheap/internal/pageheap"
)

// processMaps is the number of the process's kernel mappings: the lines of
// /proc/self/maps.
func processMaps(t testing.TB) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Skipf("no /proc/self/maps: %v", err)
	}
	return bytes.Count(b, []byte{'\n'})
}

// reallocChurn allocates blocks of about 300 KiB, each with its first byte
// written (so that a move has a page to move), then makes reallocs random
// Reallocs of them between 264 and 864 KiB, writing the first byte of each
// result, and calls check every so often; it returns the blocks.
func reallocChurn(t testing.TB, h *Heap, blocks, reallocs int, check func(i int)) [][]byte {
	rng := rand.New(rand.NewPCG(1, 2))
	bs := make([][]byte, blocks)
	for i := range bs {
		bs[i] = h.Alloc(300<<10 + rng.IntN(8<<10))
		bs[i][0] = byte(i)
	}
	check(-1)
	for i := range reallocs {
		j := rng.IntN(blocks)
		n := 264<<10 + rng.IntN(600<<10)
		b := h.Realloc(bs[j], n)
		if b[0] != byte(j) {
			t.Fatalf("realloc %d: block %d's first byte %#x, want %#x", i, j, b[0], byte(j))
		}
		bs[j] = b
		if (i+1)%max(reallocs/8, 1) == 0 {
			check(i)
		}
	}
	return bs
}

// TestReallocMapsTorture is issue 37's reproducer at its full size, opt-in
// (a few GiB of address space and minutes):
//
//	OFFHEAP_MAPS=1 go test -run ReallocMapsTorture -v .
//
// OFFHEAP_MAPS_BLOCKS and OFFHEAP_MAPS_REALLOCS scale it.
func TestReallocMapsTorture(t *testing.T) {
	if os.Getenv("OFFHEAP_MAPS") == "" {
		t.Skip("set OFFHEAP_MAPS=1 to run")
	}
	skipRace(t, "regions are Go memory, and Realloc copies")
	blocks, reallocs := 9000, 424000
	if v, err := strconv.Atoi(os.Getenv("OFFHEAP_MAPS_BLOCKS")); err == nil {
		blocks = v
	}
	if v, err := strconv.Atoi(os.Getenv("OFFHEAP_MAPS_REALLOCS")); err == nil {
		reallocs = v
	}
	h := newTestHeap(t, Options{ProfileBytes: -1})
	start := processMaps(t)
	var after int
	bs := reallocChurn(t, h, blocks, reallocs, func(i int) {
		m := processMaps(t)
		if i < 0 {
			after = m
		}
		t.Logf("after %d reallocs: %d mappings (%d at the start, %d after the Allocs); moved ranges %d", i+1, m, start, after, h.movedRanges())
	})
	end := processMaps(t)
	for _, b := range bs {
		h.Free(b)
	}
	h.Trim()
	freed := processMaps(t)
	t.Logf("start %d, after %d Allocs %d, after %d Reallocs %d, freed and trimmed %d", start, blocks, after, reallocs, end, freed)
	if end > 2*after {
		t.Errorf("after %d Reallocs %d mappings, more than twice the %d after the Allocs", reallocs, end, after)
	}
	if freed > start+16 {
		t.Errorf("freed and trimmed: %d mappings, %d at the start", freed, start)
	}
}

// heapMaps is the number of the process's kernel mappings that lie in h's
// regions (their guards included): the heap's own, whatever the Go runtime
// maps meanwhile.
func heapMaps(t testing.TB, h *Heap) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Skipf("no /proc/self/maps: %v", err)
	}
	n := 0
	for line := range bytes.Lines(b) {
		lo, hi, ok := mapsRange(line)
		if !ok {
			continue
		}
		for _, r := range h.pages.Regions.Load().ByPage {
			if lo < r.Base+r.Bytes+maxSmall && hi > r.Base-maxSmall { // maxSmall: pageheap.RegionGuard, where there is one
				n++
				break
			}
		}
	}
	return n
}

// mapsRange parses the address range that starts a line of /proc/self/maps.
func mapsRange(line []byte) (lo, hi uintptr, ok bool) {
	i := bytes.IndexByte(line, ' ')
	if i < 0 {
		return 0, 0, false
	}
	a, b, ok := bytes.Cut(line[:i], []byte{'-'})
	if !ok {
		return 0, 0, false
	}
	l, err1 := strconv.ParseUint(string(a), 16, 64)
	h, err2 := strconv.ParseUint(string(b), 16, 64)
	return uintptr(l), uintptr(h), err1 == nil && err2 == nil
}

// TestReallocMapsBounded: random Reallocs of large blocks, most of which
// move, keep the kernel's mappings of the heap within what its moved ranges
// allow (internal/pageheap/mappings.go), and Free and Trim merge them back to what the heap
// had after the Allocs. Positive controls: with ClaimMove always true and
// renewMoved doing nothing (every move recorded, no range renewed),
//
//	realloc_maps_test.go:150: after 50 Reallocs the heap keeps 31 moved ranges, more than twice 12
//
// and with renewFree doing nothing (Trim merges no range renewed apart),
//
//	realloc_maps_test.go:161: every block freed and trimmed: the heap's regions hold 5 mappings (3 after the Allocs, 1 before), 0 moved ranges
func TestReallocMapsBounded(t *testing.T) {
	h := moveTestHeap(t)
	before := heapMaps(t, h)
	var after int
	bs := reallocChurn(t, h, 64, 400, func(i int) {
		m := heapMaps(t, h)
		if i < 0 {
			after = m
			return
		}
		if r := h.movedRanges(); r > 2*pageheap.MaxMovedRanges {
			t.Fatalf("after %d Reallocs the heap keeps %d moved ranges, more than twice %d", i+1, r, pageheap.MaxMovedRanges)
		}
		if m > after+3*pageheap.MaxMovedRanges {
			t.Fatalf("after %d Reallocs the heap's regions hold %d mappings, %d after the Allocs", i+1, m, after)
		}
	})
	for _, b := range bs {
		h.Free(b)
	}
	h.Trim()
	if m, r := heapMaps(t, h), h.movedRanges(); m > after || r != 0 {
		t.Fatalf("every block freed and trimmed: the heap's regions hold %d mappings (%d after the Allocs, %d before), %d moved ranges", m, after, before, r)
	}
}
