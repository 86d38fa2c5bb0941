package cache

// counts is a shard's share of Stats, counted under the shard's lock (the
// lock-free Gets count theirs in the readers' stripes).
type counts struct {
	hits, misses, evictions, expirations uint64
	sets, deletes, compactions           uint64
}

// Stats is a snapshot of a cache's counters and size.
type Stats struct {
	Hits        uint64 // Gets and Views that found a value
	Misses      uint64 // Gets and Views that found none (an expired entry included)
	Sets        uint64 // Set calls that reached a shard (stored or refused)
	Deletes     uint64 // Deletes that removed an entry
	Evictions   uint64 // entries removed to make room
	Expirations uint64 // entries removed because their TTL had passed
	Entries     uint64 // entries held, expired ones not yet removed included
	Bytes       uint64 // heap bytes held: segments, large values' blocks at class size, the index
	MaxBytes    uint64 // Options.MaxBytes
	Compactions uint64 // segments rewritten by compaction
}

// Stats returns the cache's counters, summed over its shards (each read
// under its lock, so the figures are each shard's at a slightly different
// moment while other goroutines use the cache).
func (c *Cache) Stats() Stats {
	st := Stats{MaxBytes: uint64(c.maxBytes)}
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		st.Hits += s.counts.hits
		st.Misses += s.counts.misses
		st.Sets += s.counts.sets
		st.Deletes += s.counts.deletes
		st.Evictions += s.counts.evictions
		st.Expirations += s.counts.expirations
		st.Entries += uint64(s.index.live)
		st.Bytes += uint64(s.bytes)
		st.Compactions += s.counts.compactions
		s.mu.Unlock()
	}
	if c.lockFree {
		h, m := c.readers.counts()
		st.Hits += h
		st.Misses += m
	}
	return st
}
