package cache_test

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/offheap/offheap"
)

// footprint is the heap memory that is not free pages: blocks in use, the
// free blocks of partly used spans, and the free blocks the heap's stocks
// hold. Wholly free pages go back to the operating system on the heap's
// release timer, so footprint is what stays resident.
func footprint(st offheap.Stats) uint64 {
	return st.InUseBytes + st.SpanFreeBytes + st.MagazineBytes + st.DepotBytes + st.LocalBytes
}

// TestDeleteCompacts deletes 90% of a cache's entries, at random, and
// checks that the cache compacted itself: the heap's footprint over the
// bytes in use is at most 1.3, with no call but the Deletes.
func TestDeleteCompacts(t *testing.T) {
	if pageScale > 1 {
		// Spans four times larger keep four times the reserve per class:
		// 1.30-1.33 here (docs/DESIGN.md, The cache package).
		t.Skip("the 1.3 figure is for OS pages up to 16 KiB")
	}
	if raceBuild && testing.Short() {
		t.Skip("too slow for -short in a race build")
	}
	if checkedBuild {
		t.Skip("checked mode quarantines freed blocks and relocates without packing")
	}
	c := newCache(t, 64<<20)
	// Large enough that the heap's fixed reserves (per class, a span's
	// free blocks and some empty spans kept for reuse) do not dominate.
	n := 200000
	r := rand.New(rand.NewPCG(1, 2))
	key := make([]byte, 16)
	for i := range n {
		binary.LittleEndian.PutUint64(key, uint64(i))
		c.Set(key, make([]byte, 16+r.IntN(200)))
	}
	if st := c.Stats(); st.Evictions != 0 {
		t.Fatalf("the cache evicted (%+v): make it larger", st)
	}
	before := c.Heap().Stats()
	for _, i := range r.Perm(n)[:n*9/10] {
		binary.LittleEndian.PutUint64(key, uint64(i))
		c.Delete(key)
	}
	st := c.Heap().Stats()
	ratio := float64(footprint(st)) / float64(st.InUseBytes)
	t.Logf("before: in use %d, footprint %d; after deleting 90%%: in use %d, footprint %d (%.2f), %d compactions, %d relocations",
		before.InUseBytes, footprint(before), st.InUseBytes, footprint(st), ratio, c.Stats().Compactions, st.Relocations)
	if ratio > 1.3 {
		t.Errorf("footprint / in use = %.2f after deleting 90%%, want at most 1.3", ratio)
	}
}

// TestBoundChangingSizes stores values whose size changes phase by phase in
// a cache at its budget, and checks the heap's footprint against MaxBytes
// after each phase.
func TestBoundChangingSizes(t *testing.T) {
	if raceBuild && testing.Short() {
		t.Skip("too slow for -short in a race build")
	}
	if checkedBuild {
		t.Skip("checked mode's blocks are larger and its freed blocks wait in quarantine")
	}
	const maxBytes = 16 << 20
	c := newCache(t, maxBytes)
	key := make([]byte, 16)
	r := rand.New(rand.NewPCG(3, 4))
	phase := 300000
	if testing.Short() {
		phase = 100000
	}
	for _, size := range []int{16, 200, 40, 1000, 100, 3000, 24} {
		for range phase {
			binary.LittleEndian.PutUint64(key, r.Uint64N(1<<20))
			c.Set(key, make([]byte, size+r.IntN(size/4+1)))
		}
		st := c.Heap().Stats()
		ratio := float64(footprint(st)) / maxBytes
		t.Logf("values of %d bytes: footprint %d = %.3f MaxBytes, mapped %.3f, cache bytes %.3f", size, footprint(st), ratio,
			float64(st.MappedBytes)/maxBytes, float64(c.Stats().Bytes)/maxBytes)
		if ratio > 1.05 {
			t.Errorf("values of %d bytes: footprint %.3f MaxBytes, want at most 1.05", size, ratio)
		}
	}
}
