package cache

import "iter"

// All returns an iterator over the cache's entries, shard by shard. Each
// shard's entries are copied out under its lock, then yielded without it, so
// the loop body may call the cache. The key and value slices are valid only
// until the loop body returns (the iterator reuses their memory): copy what
// must outlive it. An entry set or deleted during the loop is seen or not
// according to whether its shard had been copied yet; each shard is seen as
// it was at one moment, the cache as a whole at none. Expired entries are
// skipped; on a closed cache the loop runs zero times.
func (c *Cache) All() iter.Seq2[[]byte, []byte] {
	return func(yield func(k, v []byte) bool) {
		var buf []byte
		var ends []int // per entry: end of key, end of value in buf
		for i := range c.shards {
			s := &c.shards[i]
			buf, ends = buf[:0], ends[:0]
			s.mu.Lock()
			if s.closed {
				s.mu.Unlock()
				return
			}
			var now int64
			if s.expiring > 0 {
				now = c.now()
			}
			s.each(func(e entry) {
				if x := e.expiry(); x != 0 && x <= now {
					return
				}
				buf = append(buf, e.key()...)
				ends = append(ends, len(buf))
				buf = append(buf, e.value()...)
				ends = append(ends, len(buf))
			})
			s.mu.Unlock()
			start := 0
			for j := 0; j < len(ends); j += 2 {
				k, v := buf[start:ends[j]:ends[j]], buf[ends[j]:ends[j+1]:ends[j+1]]
				start = ends[j+1]
				if !yield(k, v) {
					return
				}
			}
		}
	}
}
