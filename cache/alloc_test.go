package cache_test

import (
	"encoding/binary"
	"testing"

	"github.com/offheap/offheap/cache"
)

// churnOps runs ops Sets and Gets of keys over more than c holds, with
// values of changing sizes, so that the cache evicts and compacts.
func churnOps(c *cache.Cache, keys, ops, round int, val, dst []byte) []byte {
	var k [16]byte
	for j := range ops {
		i := (j*7919 + round*104729) % keys
		binary.LittleEndian.PutUint64(k[:], uint64(i)*0x9E3779B97F4A7C15)
		if j%10 == 9 {
			n := 64 + (i*31+round*17)%193
			c.Set(k[:], val[:n])
			continue
		}
		dst, _ = c.Get(dst[:0], k[:])
	}
	return dst
}

// TestChurnAllocatesLittle checks that Set, Get, eviction and compaction
// in steady state allocate next to nothing on the Go heap, so that the
// cache gives the collector no work of its own: what is left is the
// heap's census (Stats) at each footprint check, its profile's records of
// sampled segments, and Trim, each once in many thousand operations.
func TestChurnAllocatesLittle(t *testing.T) {
	if raceBuild || checkedBuild {
		t.Skip("the race detector and checked mode's records allocate")
	}
	c, err := cache.New(cache.Options{MaxBytes: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const keys = 60_000 // about 1.5x what 8 MiB holds
	val := make([]byte, 256)
	dst := make([]byte, 0, 256)
	for r := range 4 { // warm up: fill, evict, grow every shard's index
		dst = churnOps(c, keys, 10*keys, r, val, dst)
	}
	r := 4
	allocs := testing.AllocsPerRun(50, func() {
		dst = churnOps(c, keys, keys, r, val, dst)
		r++
	})
	if allocs > keys/5000 {
		t.Errorf("a churn of %d ops allocates %v times on the Go heap; want at most %d: find the allocations with go test -memprofile",
			keys, allocs, keys/5000)
	}
	// Positive control: the same measure sees one allocation.
	var sink []byte
	if n := testing.AllocsPerRun(5, func() { sink = make([]byte, len(val)+r) }); n < 1 || len(sink) == 0 {
		t.Errorf("AllocsPerRun sees %v allocations of a make; want 1", n)
	}
}
