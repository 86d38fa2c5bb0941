package cache

// Segments: a shard keeps its records in segments, heap blocks of the
// cache's segment size (a power of two up to 64 KiB), written in order like
// a log. A Set appends a record to the tail segment of one of the shard's
// two logs (the small and the main log of the eviction policy, evict.go)
// and points a slot at it; a record replaced, deleted or evicted is marked
// dead in place, and its bytes come back when its segment is evicted from
// its log's head or compacted. A record over 4 KiB (extFrom), or over a
// quarter of a small segment, keeps its value in a heap block of its own,
// which the record points at.
//
// Segment numbers index the shard's segs (Go memory, one element per
// segment, not per entry); a freed number is reused. The segment's unused
// end is never read: records are parsed from offset 0 up to used.

import (
	"unsafe"

	"github.com/offheap/offheap/internal/osmem"
)

const (
	logSmall = 0
	logMain  = 1
)

// segInfo is one segment of a shard.
type segInfo struct {
	addr uintptr // the segment's heap block; 0 for a free number
	used int32   // bytes written, from the start
	live int32   // bytes of records not dead
	log  uint8   // logSmall or logMain
	// exts is set once a record whose value is in a block of its own
	// (flagExt) is written here, so that clearLogs walks only the
	// segments that may hold such blocks.
	exts bool
}

// segLog is one of a shard's logs: its segments, oldest first; the last is
// the tail, where records are appended, unless tail is 0 (closed: the next
// append opens a segment).
type segLog struct {
	ids   []uint32
	tail  uint32
	bytes int64 // the segments' bytes
	ext   int64 // the blocks of its live records' values kept apart (flagExt), at class size
	// head is how far eviction has gone into the head segment, ids[0]:
	// the offset of the first record it has not passed (evictHead).
	head int
}

// size is the log's bytes for the policy's proportions: its segments and
// the values its records keep in blocks of their own.
func (l *segLog) size() int64 { return l.bytes + l.ext }

// dropID removes the j-th segment number from the log, in place: the
// slice keeps its array, so that the appends that follow allocate nothing
// once the log has reached its largest length. Dropping the head ends
// eviction's walk of it.
func (l *segLog) dropID(j int) {
	copy(l.ids[j:], l.ids[j+1:])
	l.ids = l.ids[:len(l.ids)-1]
	if j == 0 {
		l.head = 0
	}
}

// entryAt is the record slot value v points at.
func (s *shard) entryAt(v uint64) entry {
	return entry(s.segs[slotSeg(v)].addr + uintptr(v&(1<<offBits-1))<<3)
}

// newSegment opens a segment at the tail of log li, in the block
// compactStep took ahead if it did. It returns the heap's error, or
// ErrTooLarge where the shard has no free segment number.
func (c *Cache) newSegment(s *shard, li int) error {
	var id uint32
	if n := len(s.freeIDs); n > 0 {
		id = s.freeIDs[n-1]
		s.freeIDs = s.freeIDs[:n-1]
	} else {
		if len(s.segs) > maxSegs {
			return ErrTooLarge
		}
		if len(s.segs) == 0 {
			s.segs = append(s.segs, segInfo{}) // number 0 is never used
		}
		id = uint32(len(s.segs))
		s.segs = append(s.segs, segInfo{})
		s.publishSegs()
	}
	b := s.spare
	if b != nil {
		s.spare = nil
	} else {
		var err error
		if b, err = c.heap.TryAllocUnzeroed(c.segSize); err != nil {
			s.freeIDs = append(s.freeIDs, id)
			return err
		}
	}
	if s.loading {
		// A load fills the segment whole: its pages come in one call,
		// not a fault each (7% of a load of fresh memory).
		_ = osmem.Populate(unsafe.Pointer(unsafe.SliceData(b)), uintptr(len(b)))
	}
	s.segs[id] = segInfo{addr: addrOf(b), log: uint8(li)}
	l := &s.logs[li]
	l.ids = append(l.ids, id)
	l.tail = id
	l.bytes += int64(c.segSize)
	s.bytes += int64(c.segSize)
	return nil
}

// reserve makes the tail of log li able to take n more bytes, opening a
// segment if it cannot.
func (c *Cache) reserve(s *shard, li, n int) error {
	l := &s.logs[li]
	if l.tail != 0 && int(s.segs[l.tail].used)+n <= c.segSize {
		return nil
	}
	return c.newSegment(s, li)
}

// tailRoom reports whether log li's tail takes n more bytes.
func (c *Cache) tailRoom(s *shard, li, n int) bool {
	l := &s.logs[li]
	return l.tail != 0 && int(s.segs[l.tail].used)+n <= c.segSize
}

// place takes n bytes at the tail of log li, which reserve made room in,
// for a record (ext: one whose value is in a block of its own), and
// returns their address and location.
func (s *shard) place(li, n int, ext bool) (uintptr, uint64) {
	id := s.logs[li].tail
	g := &s.segs[id]
	g.exts = g.exts || ext
	off := int(g.used)
	g.used += int32(n)
	g.live += int32(n)
	s.live += int64(n)
	return g.addr + uintptr(off), locOf(id, off)
}

// kill marks the record slot value v points at dead, and frees its value's
// block; the record's bytes come back with its segment.
func (c *Cache) kill(s *shard, v uint64) {
	e := s.entryAt(v)
	n := e.size()
	if e.expiry() != 0 {
		s.expiring--
	}
	g := &s.segs[slotSeg(v)]
	if b := e.ext(); b != nil {
		cs := c.classSize(len(b))
		s.bytes -= cs
		s.logs[g.log].ext -= cs
		c.heap.Free(b)
	}
	e.markDead()
	g.live -= int32(n)
	s.live -= int64(n)
}

// dropSegment frees segment id, which the caller has taken out of its log's
// ids and whose records are all dead.
func (c *Cache) dropSegment(s *shard, id uint32) {
	g := &s.segs[id]
	l := &s.logs[g.log]
	if l.tail == id {
		l.tail = 0
	}
	l.bytes -= int64(c.segSize)
	s.bytes -= int64(c.segSize)
	c.heap.Free(unsafe.Slice((*byte)(ptr(g.addr)), c.segSize))
	*g = segInfo{}
	s.freeIDs = append(s.freeIDs, id)
}

// records calls f with each record of segment id that is not dead, in log
// order, until f returns false.
func (s *shard) records(id uint32, f func(e entry, off int) bool) {
	s.recordsFrom(id, 0, f)
}

// recordsFrom is records from offset from, a record's start. It returns
// the offset after the last record it passed: the segment's used bytes
// where f never returned false.
func (s *shard) recordsFrom(id uint32, from int, f func(e entry, off int) bool) int {
	// f may open segments, which moves segs: read the segment's fields once.
	addr, used := s.segs[id].addr, int(s.segs[id].used)
	for off := from; off < used; {
		e := entry(addr + uintptr(off))
		n := e.size()
		if !e.dead() && !f(e, off) {
			return off + n
		}
		off += n
	}
	return used
}

// clearLogs frees every segment and value block of s and empties its logs.
func (c *Cache) clearLogs(s *shard) {
	for li := range s.logs {
		l := &s.logs[li]
		for _, id := range l.ids {
			g := &s.segs[id]
			if g.exts {
				s.records(id, func(e entry, _ int) bool {
					if b := e.ext(); b != nil {
						s.bytes -= c.classSize(len(b))
						c.heap.Free(b)
					}
					return true
				})
			}
			c.heap.Free(unsafe.Slice((*byte)(ptr(g.addr)), c.segSize))
			s.bytes -= int64(c.segSize)
		}
		*l = segLog{}
	}
	s.segs, s.freeIDs = s.segs[:0], s.freeIDs[:0]
	s.live, s.expiring = 0, 0
}

// each calls f with every live record of s, the small log's then the main
// log's, each oldest first.
func (s *shard) each(f func(e entry)) {
	for li := range s.logs {
		for _, id := range s.logs[li].ids {
			s.records(id, func(e entry, _ int) bool { f(e); return true })
		}
	}
}
