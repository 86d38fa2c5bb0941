// Package cache is a concurrent key-value cache whose index, keys and values
// all live in an offheap.Heap, outside the Go heap: the garbage collector
// never scans its entries, so a cache of millions of them costs no GC cycle
// anything, and the Go heap holds only the Cache and its shards.
//
//	c, err := cache.New(cache.Options{MaxBytes: 256 << 20})
//	if err != nil {
//		return err
//	}
//	defer c.Close()
//	c.Set([]byte("k"), []byte("v"))
//	v, ok := c.Get(nil, []byte("k")) // appends the value to dst (nil here)
//
// # When to use it
//
// Use it where a map[string][]byte (or a cache built on one) makes the
// collector scan millions of entries, or where memory must stay under a
// budget and go back to the system when the cache shrinks. For a few
// thousand entries a Go map is simpler; for values that must never be
// evicted, a map of offheap.Ref (docs/storing-values.md) keeps them.
//
// # What it guarantees
//
//   - A bound: MaxBytes bounds the heap memory the cache holds: the
//     segments its entries are packed into, large values' own blocks, the
//     index, and a sixteenth kept for the heap's slack. Set evicts to stay
//     within it.
//   - Memory is reused and given back: evicted segments go back to the heap
//     whole, and the cache compacts itself (rewrites the segment with the
//     most dead bytes) when deletes and replacements leave its segments
//     thin, by the rule in compact.go, a bounded step per call; the freed
//     pages go back to the operating system.
//   - Values of any size from 0 to MaxEntryBytes (half a shard's share of
//     MaxBytes; Options.Shards trades concurrency for larger entries).
//   - Eviction is scan-resistant: S3-FIFO over logs of segments. A new
//     entry goes to a small log (about a tenth of the shard) and is evicted
//     from there unless it is read; the others are kept in a main log, a
//     2-bit counter in the index slot giving a read entry more passes, and
//     a ghost of recently evicted keys admits a returning key to main
//     (docs/DESIGN.md, The cache package, has the measured hit ratios).
//   - Safety: a Get or Has on a cache with a heap of its own takes no lock:
//     it reads, checks that no writer changed the shard meanwhile, and
//     otherwise reads again, so it never returns bytes a writer was changing
//     and never waits for one; every other read copies (Get) or calls its
//     function (View) under the shard's lock. Close may race other calls:
//     they then behave as on a closed cache (documented per method), and
//     never fault. Bad input (a key over 65535 bytes or too long for a
//     small cache's segments, an entry over MaxEntryBytes) is refused
//     without losing any other entry.
//   - Visibility: the segments are heap blocks, so the heap's census, its
//     pprof profile, the race detector and checked mode (-tags offheapchecked)
//     all see them (per segment, not per entry; those builds read under the
//     lock); Stats has the cache's own counters, and offheapexpvar and
//     offheapprom export them.
//
// Keys and values are copied in and out: no slice passed to or returned by
// the cache aliases its memory, except the bytes a View's function sees.
package cache
