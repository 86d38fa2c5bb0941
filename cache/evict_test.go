package cache_test

import (
	"encoding/binary"
	"testing"

	"github.com/offheap/offheap/cache"
)

// TestScanResistance reads a hot set, then inserts a scan of keys ten
// times the cache's size, each once: the hot set survives the scan.
func TestScanResistance(t *testing.T) {
	c, err := cache.New(cache.Options{MaxBytes: 256 << 10, Shards: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	k, v := make([]byte, 16), make([]byte, 16)
	set := func(i uint64) { binary.LittleEndian.PutUint64(k, i); c.Set(k, v) }
	get := func(i uint64) bool { binary.LittleEndian.PutUint64(k, i); _, ok := c.Get(nil, k); return ok }
	// Fill the cache with entries read twice each, then measure its size.
	for i := uint64(0); c.Stats().Evictions == 0; i++ {
		set(i)
		get(i)
		get(i)
	}
	hot := uint64(c.Len()) / 2
	c.Reset()
	for i := range hot {
		set(i)
	}
	for range 2 {
		for i := range hot {
			get(i)
		}
	}
	for i := range 10 * 2 * hot {
		set(1<<32 + i)
	}
	kept := 0
	for i := range hot {
		if get(i) {
			kept++
		}
	}
	if kept < int(hot)*9/10 {
		t.Errorf("%d of %d hot entries survived a scan ten times the cache, want 90%%", kept, hot)
	}
}
