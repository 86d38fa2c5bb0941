package cache_test

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/offheap/offheap"
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
	// A FIFO or an LRU keeps none of them. The bar is below all but: in
	// checked mode the quarantine holds part of the budget for a while, and
	// 8-9% of the hot entries go (91-100% kept in 40 runs).
	if kept < int(hot)*3/4 {
		t.Errorf("%d of %d hot entries survived a scan ten times the cache, want 75%%", kept, hot)
	}
}

// TestHeapLimitEvicts: a cache on a heap whose Limit is below MaxBytes
// keeps storing at the limit, evicting its oldest entries, with values in
// segments and in blocks of their own, with shards that filled late and
// hold nothing to evict (they evict from the others), and with an index
// whose next table the heap refuses; when another
// user of the heap holds all of it, TrySet says so with ErrLimit and the
// cache stays usable.
func TestHeapLimitEvicts(t *testing.T) {
	const limit = 2 << 20
	for _, tc := range []struct {
		name     string
		maxBytes int64
		shards   int
		size     int
		n        int
	}{
		{"packed", 8 << 20, 4, 1000, 6000},
		{"own blocks", 8 << 20, 4, 20 << 10, 3000},
		{"empty shards", 64 << 20, 16, 8, 3000},  // 16 segments of 264 KiB do not fit
		{"index growth", 256 << 20, 1, 8, 60000}, // the index's next table does not fit
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := offheap.NewHeap(offheap.Options{Limit: limit})
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			c, err := cache.New(cache.Options{MaxBytes: tc.maxBytes, Shards: tc.shards, Heap: h})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			v := make([]byte, tc.size)
			k := make([]byte, 8)
			for i := range tc.n {
				binary.LittleEndian.PutUint64(k, uint64(i))
				binary.LittleEndian.PutUint64(v, uint64(i))
				if err := c.TrySet(k, v); err != nil {
					t.Fatalf("TrySet %d of %d: %v", i, tc.n, err)
				}
				if got, ok := c.Get(nil, k); !ok || binary.LittleEndian.Uint64(got) != uint64(i) {
					t.Fatalf("the value just set (%d of %d) is missing; %+v", i, tc.n, c.Stats())
				}
			}
			if st := c.Stats(); st.Evictions == 0 {
				t.Errorf("Stats %+v: no evictions, so the heap's limit was never met", st)
			}
			if m := h.Stats().MappedBytes; m > limit {
				t.Errorf("the heap maps %d bytes, over its Limit %d", m, limit)
			}
			// Another user takes all the heap can give once the cache is
			// emptied: TrySet, with nothing to evict, reports the limit.
			c.Reset()
			var other [][]byte
			for {
				b, err := h.TryAlloc(64 << 10)
				if err != nil {
					break
				}
				other = append(other, b)
			}
			binary.LittleEndian.PutUint64(k, 1<<40)
			if err := c.TrySet(k, v); !errors.Is(err, offheap.ErrLimit) {
				t.Fatalf("TrySet on a heap another user fills: %v, want ErrLimit", err)
			} else if msg := err.Error(); !strings.HasPrefix(msg, "offheap: cache: ") || strings.Count(msg, "offheap:") != 1 {
				t.Errorf("TrySet's error %q: want one \"offheap:\", then \"cache: \"", msg)
			}
			for _, b := range other {
				h.Free(b)
			}
			binary.LittleEndian.PutUint64(k, 1<<41)
			if err := c.TrySet(k, v); err != nil {
				t.Fatalf("TrySet once the other user freed its blocks: %v", err)
			}
			if _, ok := c.Get(nil, k); !ok {
				t.Fatal("the value set after the other user freed its blocks is missing")
			}
		})
	}
}
