package cache

import (
	"errors"
	"fmt"
	"hash/maphash"
	"math/bits"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/offheap/offheap"
)

// Options configures a Cache.
type Options struct {
	// MaxBytes bounds everything the cache keeps in its heap: the segments
	// its entries (header, key and value) are packed into, the blocks of
	// values too large for a segment (at the size class the heap rounds
	// them to) and its index. The cache evicts to stay within it, and keeps a
	// sixteenth of it as the heap's own slack (free blocks waiting in the
	// heap's per-P stocks, partly filled spans), so that the heap's
	// memory for the cache stays within MaxBytes. Required: at least
	// MinBytes.
	MaxBytes int64

	// Heap is the heap the cache allocates from. nil gives the cache a
	// heap of its own, which Close closes; a heap passed here must stay
	// open until the cache is closed, and other users of it do not count
	// against MaxBytes. Where such a heap refuses memory (its Limit), a
	// Set evicts, from its shard and then from others, until it has room.
	Heap *offheap.Heap

	// Shards is the number of shards, each a lock, an index, logs of
	// segments and a share of MaxBytes: a power of two up to 65536. 0
	// chooses one from MaxBytes (a shard per 4 MiB, at least 16 of 2 MiB
	// where MaxBytes allows, at most 256). An entry
	// may take at most half a shard's share (MaxEntryBytes), so fewer
	// shards admit larger values.
	Shards int

	// DefaultTTL is the lifetime of the entries Set and TrySet store: 0
	// means they never expire. SetWithTTL chooses per entry.
	DefaultTTL time.Duration
}

// MinBytes is the smallest Options.MaxBytes New accepts.
const MinBytes = 64 << 10

var (
	// ErrClosed is returned by calls on a closed cache.
	ErrClosed = errors.New("offheap: cache: the cache is closed")
	// ErrTooLarge is returned by TrySet for an entry the cache cannot
	// hold: a key longer than 65535 bytes or than its segments take (see
	// MaxEntryBytes), or a key and value whose entry exceeds
	// MaxEntryBytes. The cache is left as it was.
	ErrTooLarge = errors.New("offheap: cache: entry too large for the cache")
)

// heapError is an error of the heap's as the cache returns it, wrapped
// (errors.Is and As see it): "offheap: cache: ", what the cache was doing,
// then the heap's message without its own "offheap: ".
type heapError struct {
	what string
	err  error
}

func (e *heapError) Error() string {
	return "offheap: cache: " + e.what + ": " + strings.TrimPrefix(e.err.Error(), "offheap: ")
}

func (e *heapError) Unwrap() error { return e.err }

// Cache is a concurrent key-value cache whose index, keys and values all live
// in an offheap.Heap: the Go heap holds only the Cache and its shards, however
// many entries it has, so the garbage collector never scans the entries. All
// methods are safe for concurrent use, Close included. Make one with New:
// the zero Cache has no heap, and its Get and Set panic.
type Cache struct {
	// Set by New, read by every call; with closed, on lines no call writes
	// (the pad below), so that Gets on all cores keep them cached.
	heap        *offheap.Heap
	own         bool // the cache made heap and closes it
	seed        maphash.Seed
	shards      []shard
	shardMask   uint64
	shardBudget int64 // bytes each shard may hold at most
	maxEntry    int64 // the largest entry's bytes
	segSize     int   // a segment's bytes
	maxBytes    int64
	defaultTTL  time.Duration
	epoch       time.Time
	classes     []int64  // the heap's size classes, ascending
	small       []uint32 // classSize for n <= smallSizes, by (n+7)/8
	// lockFree is set where Get reads without the shard's lock (see
	// readers.go): a cache that owns its heap, in a build that is neither
	// a race build nor checked; readers counts those reads.
	lockFree bool
	readers  *readers
	closed   atomic.Bool // written once, by Close
	_        [64]byte

	// budget is the bytes each shard may hold now: shardBudget, less
	// where the heap's slack has grown.
	budget atomic.Int64
	// freedBytes is the bytes rebuilds and compaction freed since the
	// last Trim.
	freedBytes atomic.Int64
	// heapVictim is where the next eviction for a heap that refused an
	// allocation looks first among the other shards (evictForHeap).
	heapVictim atomic.Uint32
	closeMu    sync.Mutex
	compactor  compactor
}

// New creates a cache. It returns an error, and no cache, for a MaxBytes
// below MinBytes, a Shards that is not 0 or a power of two (or gives a shard
// less than 4 KiB), a negative DefaultTTL, or a heap that cannot be made
// (wrapping errors.ErrUnsupported on a system without a backend).
func New(opts Options) (*Cache, error) {
	if opts.MaxBytes < MinBytes {
		return nil, fmt.Errorf("offheap: cache: Options.MaxBytes is %d: it must be at least MinBytes (%d)", opts.MaxBytes, MinBytes)
	}
	n := opts.Shards
	if n == 0 {
		n = defaultShards(opts.MaxBytes)
	}
	if n < 1 || n > 1<<16 || n&(n-1) != 0 {
		return nil, fmt.Errorf("offheap: cache: Options.Shards is %d: it must be 0 or a power of two up to 65536", opts.Shards)
	}
	if opts.DefaultTTL < 0 {
		return nil, fmt.Errorf("offheap: cache: Options.DefaultTTL is %v: it must not be negative", opts.DefaultTTL)
	}
	c := &Cache{
		heap:       opts.Heap,
		seed:       maphash.MakeSeed(),
		shards:     make([]shard, n),
		shardMask:  uint64(n - 1),
		maxBytes:   opts.MaxBytes,
		defaultTTL: opts.DefaultTTL,
		epoch:      time.Now(),
	}
	c.shardBudget = (opts.MaxBytes - opts.MaxBytes/16) / int64(n) // not *15/16: MaxBytes may be near math.MaxInt64
	if c.shardBudget < 4<<10 {
		return nil, fmt.Errorf("offheap: cache: Options.Shards is %d: each shard's share of MaxBytes (%d) would be below 4 KiB; use fewer shards", n, opts.MaxBytes)
	}
	c.maxEntry = c.shardBudget / 2
	c.segSize = segmentSize(c.shardBudget)
	c.budget.Store(c.shardBudget)
	if c.heap == nil {
		h, err := offheap.NewHeap(offheap.Options{})
		if err != nil {
			return nil, &heapError{"the cache's heap", err}
		}
		c.heap, c.own = h, true
		if lockFreeBuild {
			c.lockFree, c.readers = true, new(readers)
		}
	}
	for _, cl := range c.heap.Stats().Classes {
		c.classes = append(c.classes, int64(cl.Size))
	}
	c.small = make([]uint32, smallSizes/8+1)
	for i := range c.small {
		c.small[i] = uint32(c.classSizeSlow(i * 8))
	}
	for i := range c.shards {
		s := &c.shards[i]
		if err := c.initShard(s); err != nil {
			c.Close()
			return nil, &heapError{"the cache's index", err}
		}
	}
	return c, nil
}

// defaultShards is the number of shards for a cache of maxBytes: a shard
// per 4 MiB, up to 256, so that each has page-run segments (bigSegment);
// but at least 16 while each keeps 2 MiB, so that writers on different
// cores of a small cache rarely want the same lock. A power of two.
// Smaller shards measured worse on the cache's other figures: hit ratio,
// resident/live after deletes, and a big cache's Get p999 (docs/DESIGN.md,
// The cache package).
func defaultShards(maxBytes int64) int {
	q := max(maxBytes>>22, min(maxBytes>>21, 16))
	if q < 1 {
		return 1
	}
	return 1 << min(8, bits.Len64(uint64(q))-1)
}

func (c *Cache) initShard(s *shard) error {
	n := c.firstTable()
	slots, err := allocSlots(c.heap, n)
	if err != nil {
		return err
	}
	s.index = table{slots: slots, min: n}
	s.bytes = s.index.bytes()
	s.publishTable()
	s.publishSegs()
	return nil
}

// bigSegment is the segment size of a shard of at least 12 of them: a page
// run just above the heap's largest size class, so that a segment freed
// gives its pages back to the page heap whole, never leaving a span that
// other segments pin.
const bigSegment = 256<<10 + 8<<10

// spanSegment is the segment size of a shard of 768 KiB to 3 MiB (a small
// cache's 2 MiB shards among them): 64 KiB, the smallest size class whose
// span is one block, so that a segment freed frees its span too.
const spanSegment = 64 << 10

// segmentSize is the segment size for a shard's budget: bigSegment or
// spanSegment where the shard holds at least 12 of them, so that evicting
// a segment evicts at most a twelfth of the shard, or, for a small shard,
// the power of two from 1 to 64 KiB that cuts it in 32.
func segmentSize(budget int64) int {
	switch {
	case budget >= 12*bigSegment:
		return bigSegment
	case budget >= 12*spanSegment:
		return spanSegment
	}
	n := 1 << 10
	for n < 64<<10 && int64(n)*2*32 <= budget {
		n *= 2
	}
	return n
}

// Heap is the heap the cache allocates from: Options.Heap, or the heap the
// cache made, which Close closes (do not close it yourself). Its Stats,
// ResidentBytes and WriteProfile show the cache's memory.
func (c *Cache) Heap() *offheap.Heap { return c.heap }

// firstTable is the length of a shard's first table, and the shortest it
// shrinks to: 1/64 of the shard's share of MaxBytes, a power of two from 16
// to 1024 slots, so that a cache filling with small entries rebuilds its
// tables fewer times and one holding large entries spends little on them.
func (c *Cache) firstTable() int {
	n := minTable
	for n < 1024 && int64(n)*2*8 <= c.shardBudget/64 {
		n *= 2
	}
	return n
}

// MaxEntryBytes is the largest entry the cache holds: a value may be up to
// MaxEntryBytes minus 32 minus the key's length (less the rounding to the
// heap's size classes). It is half a shard's share of MaxBytes. A key must
// also fit in one of the shard's segments with its record's header: shards
// of 768 KiB or more (any MaxBytes from 1 MiB with the default Shards)
// take keys of up to about 64 KiB, smaller ones shorter keys, about 1 KiB
// at MinBytes; TrySet's ErrTooLarge gives the bound.
func (c *Cache) MaxEntryBytes() int { return int(c.maxEntry) }

func (c *Cache) hash(k []byte) uint64 { return maphash.Bytes(c.seed, k) }

func (c *Cache) shardOf(h uint64) *shard { return &c.shards[h&c.shardMask] }

// now is the time on the cache's monotonic clock, in nanoseconds, never 0.
func (c *Cache) now() int64 { return int64(time.Since(c.epoch)) + 1 }

// smallSizes is the largest block size classSize answers from a table.
const smallSizes = 1024

// classSize is the bytes the heap gives a block of n bytes: its size class,
// or whole 8 KiB pages above the largest class.
func (c *Cache) classSize(n int) int64 {
	if n <= smallSizes {
		return int64(c.small[(n+7)/8])
	}
	return c.classSizeSlow(n)
}

func (c *Cache) classSizeSlow(n int) int64 {
	cl := c.classes
	if len(cl) == 0 || int64(n) > cl[len(cl)-1] {
		return (int64(n) + 8191) &^ 8191
	}
	return cl[sort.Search(len(cl), func(i int) bool { return cl[i] >= int64(n) })]
}

// Set stores v under k, copying both, and may evict other entries to make
// room. An entry the cache cannot hold (see TrySet) is not stored, and an
// older value under k stays; a Set on a closed cache does nothing. Entries
// expire after Options.DefaultTTL, if set. A nil key is the empty key.
func (c *Cache) Set(k, v []byte) { _ = c.set(k, v, c.defaultTTL) }

// SetWithTTL is Set with an entry that expires ttl from now; a ttl of 0 or
// less means it never expires.
func (c *Cache) SetWithTTL(k, v []byte, ttl time.Duration) { _ = c.set(k, v, ttl) }

// TrySet is Set that says why it stored nothing: ErrTooLarge, for an entry
// the cache cannot hold (k keeps whatever value it had); ErrClosed; or the
// heap's error, wrapped, where the heap refused memory even once the cache
// had evicted all it could (offheap.ErrLimit, from a heap whose Limit other
// users fill), the evictions made on the way standing.
func (c *Cache) TrySet(k, v []byte) error { return c.set(k, v, c.defaultTTL) }

// TrySetWithTTL is TrySet with SetWithTTL's ttl.
func (c *Cache) TrySetWithTTL(k, v []byte, ttl time.Duration) error { return c.set(k, v, ttl) }

// Get appends the value stored under k to dst and returns it, with true, or
// dst and false if k has none (or expired, or the cache is closed).
func (c *Cache) Get(dst, k []byte) ([]byte, bool) {
	h := c.hash(k)
	s := c.shardOf(h)
	if c.lockFree {
		out, r := c.readFast(s, h, k, dst, true)
		switch r {
		case peekHit:
			return out, true
		case peekMiss, peekClosed:
			return out, false
		case peekExpired:
			c.expire(s, h, k)
			return out, false
		}
	}
	s.rlock()
	if s.closed {
		s.mu.Unlock()
		return dst, false
	}
	e, ok, expired := c.lookup(s, h, k)
	if ok {
		dst = append(dst, e.value()...)
	}
	s.mu.Unlock()
	if expired {
		c.expire(s, h, k)
	}
	return dst, ok
}

// View calls f with the value stored under k, without copying it, and
// returns true; or returns false without calling f. The bytes are valid only
// until f returns: f must not keep them, modify them, or call the cache
// (the key's shard is locked while f runs).
func (c *Cache) View(k []byte, f func(v []byte)) bool {
	h := c.hash(k)
	s := c.shardOf(h)
	s.rlock()
	if s.closed {
		s.mu.Unlock()
		return false
	}
	e, ok, expired := c.lookup(s, h, k)
	if ok {
		defer s.mu.Unlock() // f may panic: the lock goes with it
		f(e.value())
		return true
	}
	s.mu.Unlock()
	if expired {
		c.expire(s, h, k)
	}
	return false
}

// Has reports whether k has a value, without counting a hit or a miss and
// without making the entry less likely to be evicted.
func (c *Cache) Has(k []byte) bool {
	h := c.hash(k)
	s := c.shardOf(h)
	if c.lockFree {
		if _, r := c.readFast(s, h, k, nil, false); r != peekRetry {
			return r == peekHit
		}
	}
	s.rlock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	i, found := s.find(h, k)
	if !found {
		return false
	}
	x := s.entryAt(atomic.LoadUint64(&s.index.slots[i])).expiry()
	return x == 0 || x > c.now()
}

// Delete removes k's value, if any. On a closed cache it does nothing.
func (c *Cache) Delete(k []byte) {
	h := c.hash(k)
	s := c.shardOf(h)
	s.lock()
	if s.closed {
		s.unlock()
		return
	}
	i, found := s.find(h, k)
	check := false
	if found {
		s.counts.deletes++
		c.removeAt(s, i)
		c.afterRemove(s)
		check = c.countRemovals(s, 1)
	}
	s.unlock()
	if check {
		c.checkHeap()
	}
	c.relocateStep()
}

// Len is the number of entries, expired ones not yet removed included; 0
// once the cache is closed.
func (c *Cache) Len() int {
	n := 0
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		n += s.index.live
		s.mu.Unlock()
	}
	return n
}

// Reset removes every entry, keeping the cache open, and gives the memory
// back to the heap. Stats' counters are kept.
func (c *Cache) Reset() {
	for i := range c.shards {
		s := &c.shards[i]
		s.lock()
		if !s.closed {
			c.clearShard(s)
			if err := c.rebuildIndex(s, 0); err != nil {
				_ = err // the emptied table stays, at its length
			}
		}
		s.unlock()
	}
	if c.own {
		c.heap.Trim()
	}
}

// clearShard frees every entry of s and empties its index.
func (c *Cache) clearShard(s *shard) {
	c.clearLogs(s)
	clear(s.index.slots)
	s.index.live, s.index.used = 0, 0
}

// Close frees every entry and the index, and closes the cache's heap if the
// cache made it. Calls that run at the same time, or later, find the cache
// closed: reads miss, Set and Delete do nothing, TrySet returns ErrClosed.
// A second Close returns ErrClosed.
func (c *Cache) Close() error {
	c.closeMu.Lock()
	defer c.closeMu.Unlock()
	if c.closed.Swap(true) {
		return ErrClosed
	}
	if c.lockFree {
		c.readers.wait() // the reads that began before they could see closed
	}
	c.compactor.mu.Lock() // a budget check reads the heap's Stats
	defer c.compactor.mu.Unlock()
	for i := range c.shards {
		s := &c.shards[i]
		s.lock()
		if s.index.slots != nil {
			c.clearShard(s)
			freeSlots(c.heap, s.index.slots)
			c.freeGhost(s)
			s.index = table{}
			s.tab.Store(nil)
		}
		s.closed = true
		s.bytes = 0
		s.unlock()
	}
	if c.own {
		return c.heap.Close()
	}
	return nil
}
