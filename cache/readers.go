package cache

// Reads without a lock. A cache that owns its heap serves Get without
// taking its shard's lock: taking a lock, even a sync.RWMutex's read lock, is a write to the
// lock's cache line, so two cores reading the same shard pass that line
// between them on every Get, and a read that meets a Set waits for it.
// Instead, writers make each shard a sequence lock: a writer adds one to
// the shard's seq when it takes the lock and again before it lets go, so
// seq is odd while the shard changes. A reader loads seq, finds and copies
// the value with no lock held, loads seq again, and keeps the copy only if
// seq is the same even number: no writer changed the shard meanwhile.
//
// What makes it safe to read memory a writer may be freeing:
//   - The reader reads only heap memory the cache has held: its index table,
//     reached through a published copy of the table's slice header (tab), and
//     its segments, reached through one of segs (segView). Every offset read
//     from a slot or a record is checked against the segment's length before
//     it is followed, so a stale or torn value leads at worst to a read of
//     another part of memory the cache held. The cache's own heap never
//     makes memory it handed out inaccessible before Close (it gives pages
//     back with madvise, which leaves them readable as zeros, and it is
//     neither checked nor guarded nor ever asked to Realloc), so such a read
//     returns bytes, never faults; the second load of seq then discards them.
//   - A value in a block of its own (a large one) is read in two steps:
//     its address comes from the record, which may be stale, so it is
//     followed only once a load of seq has shown the record to be current;
//     the copy is then checked as any other read (the block may have been
//     freed meanwhile, its memory still mapped).
//   - The one write a reader makes, the eviction policy's bit in the slot
//     (touch), is a compare-and-swap that succeeds only where the slot still
//     holds what the reader read, in a table that is not freed while any
//     reader is in flight: a table is freed only after the readers that
//     might hold it have left (readers.wait), and a rebuild of the same
//     length rewrites the table in place instead of freeing it.
//   - Close marks the cache closed and waits for the readers in flight
//     before it frees anything; a reader that begins after that finds the
//     cache closed before it reads.
//
// Readers announce themselves in stripes, one chosen by the address of the
// reading goroutine's stack, so that goroutines on different cores count
// on different cache lines and a line stays with its core. Each stripe
// counts the reads begun and ended, and the ended ones that were not hits;
// Stats adds the hits from them. A race build (where the detector would
// report the reads it is meant to race) and a checked build read under
// the lock, as does a cache on a heap it does not own, which other code may
// guard, check or Realloc.

import (
	"runtime"
	"sync/atomic"
	"unsafe"
)

// stripeBits sets the number of stripes, 1<<stripeBits.
const stripeBits = 6

// readerStripe is one stripe's counts, on a line pair of its own (adjacent
// lines are fetched together on some cores).
type readerStripe struct {
	enters atomic.Uint64 // reads begun
	exits  atomic.Uint64 // reads ended
	other  atomic.Uint64 // reads ended that were not hits
	misses atomic.Uint64 // reads that found no entry
	_      [128 - 4*8]byte
}

var _ = [1]struct{}{}[unsafe.Sizeof(readerStripe{})-128]

// readers is a cache's stripes.
type readers struct {
	stripes [1 << stripeBits]readerStripe
}

// stripe is the calling goroutine's stripe. Stacks are at least 2 KiB and
// aligned to their size, so the address of a local variable over 2 KiB
// names the goroutine's stack (or, in a larger stack, a part of it); the
// multiply spreads neighbouring stacks over the stripes.
func (r *readers) stripe() *readerStripe {
	var x byte
	a := uint64(uintptr(unsafe.Pointer(&x)))
	return &r.stripes[(a>>11)*0x9e3779b97f4a7c15>>(64-stripeBits)]
}

// wait returns once every read that began before it has ended. Reads hold
// no lock and never wait, so it waits for at most one read per stripe's
// goroutines in flight: a few hundred nanoseconds, unless one of them was
// preempted.
func (r *readers) wait() {
	for i := range r.stripes {
		st := &r.stripes[i]
		for {
			x := st.exits.Load()
			if st.enters.Load() == x { // no read in flight at this moment
				break
			}
			runtime.Gosched()
		}
	}
}

// counts is the reads' hits and misses: hits are the reads ended that
// were not counted as something else.
func (r *readers) counts() (hits, misses uint64) {
	for i := range r.stripes {
		st := &r.stripes[i]
		o, m := st.other.Load(), st.misses.Load()
		if x := st.exits.Load(); x > o {
			hits += x - o
		}
		misses += m
	}
	return hits, misses
}
