package offheap

import (
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/offheap/offheap/internal/pageheap"
)

// central is the heap-wide store of free blocks of one size class, under one
// lock: a depot of full batches that magazines spilled, and a list of the
// class's spans that have blocks to give. Magazines come here in batches, so
// the lock is taken once per several operations; with magazines off, every
// Alloc and Free comes here.
//
// The depot is what makes a producer/consumer pair cheap (Bonwick's magazine
// depot): the consumer's full magazine hands its older half over as one
// batch, and the producer's empty magazine takes a batch back, each in O(1)
// under the lock, without touching a span. The depot holds at most
// depotBatches batches; past that, spilled blocks go back to their spans, so
// spans can empty and their pages go back to the operating system.
//
// Invariant: a block is in exactly one place: the caller's hands, a magazine,
// a depot batch, or a span's free list (or not yet carved). Blocks in
// magazines and depot batches count as live for their span.
//
// Layout: three cache lines a class, so that no class's lock shares a line
// with another class's state (Heap starts the array on a line,
// centralPad). The pad leads: a zero-length array as a struct's last field
// costs a word after it (Go keeps a pointer to it inside the struct), which
// would put each lock on the line of the previous class's census whenever
// centralLists fills the three lines exactly. TestCentralLayout holds it.
type central struct {
	_ [3*64 - unsafe.Sizeof(centralLists{})]byte
	centralLists
}

// centralLists is a central's state, which central pads.
type centralLists struct {
	mu       sync.Mutex
	class    uint8
	partial  uint32   // first span id of the partial list; 0 = empty list
	empty    int      // spans on the list with no live block
	depot    []*batch // full batches, newest last
	spare    []*batch // empty batches, for reuse
	depotMax int      // most batches in the depot; set by NewHeap

	// spanFree counts the blocks of the class's spans that no one holds:
	// on a span's free list or not yet carved (Stats.SpanFreeBytes).
	spanFree uint64

	// Relocate's state of the class, kept exact under mu wherever a span's
	// live count or listing changes: relocKind before, recount after.
	relocClass

	// Census, written under mu and read without it (InUse).
	hits  atomic.Uint64 // Allocs served from a span's free list
	fresh atomic.Uint64 // Allocs served by carving a new block
	frees atomic.Uint64 // Frees that came here directly (magazines off or bypassed)
	moved atomic.Uint64 // blocks Relocate moved out of the class's spans

	// corrupt counts the free blocks of abandoned free lists.
	corrupt atomic.Uint64

	// The profile's count of the allocations no magazine counts (a
	// refill's own, or every one with magazines off): profLeft, under mu,
	// is how many more pass before the next sample, which profDue then
	// marks for the next allocation of the class to reach the slow path.
	profLeft uint64
	profDue  atomic.Bool
}

// batch is a run of free blocks moved between a magazine and the depot in
// one piece.
type batch struct {
	n      int
	blocks [maxDepth / 2]uintptr
}

// depotBytes bounds the bytes of free blocks in each class's depot (at least
// minDepotBatches batches). Trim empties the depots.
const (
	depotBytes      = 256 << 10
	minDepotBatches = 4
)

// get fills dst with free blocks and returns how many it took (at least one
// unless err != nil), and whether dst[0] was carved fresh. Called without mu.
//
// get, put and putBatch touch the heap's memory (blocks, spans, the page
// heap) only under mu and with the heap open: Close takes every central
// lock after it marks the heap closed.
func (c *central) get(h *Heap, dst []uintptr) (n int, fresh bool, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if h.closed.Load() {
		return 0, false, pageheap.ErrClosed
	}
	if k := len(c.depot); k > 0 && len(dst) >= c.depot[k-1].n {
		b := c.depot[k-1]
		c.depot = c.depot[:k-1]
		n = copy(dst, b.blocks[:b.n])
		c.spare = append(c.spare, b)
		c.hits.Add(1)
		c.countSample()
		return n, false, nil
	}
	for n < len(dst) {
		if c.partial == 0 {
			if err = c.grow(h); err != nil {
				if n > 0 {
					err = nil // a short batch is still a batch
				}
				break
			}
		}
		s := spanAt(&h.pages, c.partial)
		if s.empty() {
			c.empty-- // blocks go, or the list is abandoned: it will not be empty
		}
		k := s.relocKind()
		for n < len(dst) && !s.exhausted() {
			b, carved, ok := s.take(&h.links, h.key)
			if !ok {
				// A write after free: the blocks taken so far are sound
				// and go back; the caller panics, the lock released.
				c.recount(&h.pages, s, k) // before abandon, which recounts its own change
				e := c.abandon(h, s, b)
				for _, a := range dst[:n] {
					c.putLocked(h, a)
				}
				return 0, false, e
			}
			c.spanFree--
			if n == 0 {
				fresh = carved
			}
			dst[n] = b
			n++
		}
		if s.exhausted() {
			c.unlink(h, s)
		}
		c.recount(&h.pages, s, k)
	}
	if n > 0 {
		if fresh {
			c.fresh.Add(1)
		} else {
			c.hits.Add(1)
		}
		c.countSample()
	}
	return n, fresh, err
}

// countSample counts an allocation of c's class that no magazine counts (a
// refill's own, or any with magazines off) toward the profile's next
// sample: after profLeft of them, the class's next allocation to reach the
// slow path is sampled (profDue, taken by takeSample). Called with mu held:
// it costs the central path a compare and a decrement. A profLeft of 0 with
// profDue false, in a heap that does not profile or for the moment
// takeSample draws the next gap, counts nothing.
func (c *central) countSample() {
	if c.profLeft > 0 {
		if c.profLeft--; c.profLeft == 0 {
			c.profDue.Store(true)
		}
	}
}

// abandon gives up the free list of s, whose head at block failed follow:
// its blocks stay counted live in s, so they are never handed out and s is
// never given back, and Stats counts them as CorruptBytes. It returns the
// corruption for the caller to panic with once it has released the lock.
// Called with c's lock held.
func (c *central) abandon(h *Heap, s *span, block uintptr) *corruptError {
	k := s.relocKind()
	c.corrupt.Add(uint64(s.nfree))
	c.spanFree -= uint64(s.nfree)
	s.nfree, s.free = 0, 0
	if s.exhausted() && s.listed {
		c.unlink(h, s)
	}
	c.recount(&h.pages, s, k)
	return &corruptError{addr: block, size: classSize[s.class]}
}

// getOne is get for one block, with magazines off. It inlines.
func (c *central) getOne(h *Heap) (uintptr, error) {
	var one [1]uintptr
	_, _, err := c.get(h, one[:])
	return one[0], err
}

// put returns blocks to their spans (on a closed heap, drops them). Called
// without mu.
func (c *central) put(h *Heap, blocks []uintptr) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if h.closed.Load() {
		return
	}
	for _, b := range blocks {
		c.putLocked(h, b)
	}
}

// putBatch hands a magazine's spilled blocks to the depot as one batch, or,
// when the depot is full, back to their spans (on a closed heap, drops
// them). Called without mu.
func (c *central) putBatch(h *Heap, blocks []uintptr) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if h.closed.Load() {
		return
	}
	if len(c.depot) < c.depotMax && len(blocks) <= len(batch{}.blocks) {
		var b *batch
		if k := len(c.spare); k > 0 {
			b = c.spare[k-1]
			c.spare = c.spare[:k-1]
		} else {
			b = new(batch)
		}
		b.n = copy(b.blocks[:], blocks)
		c.depot = append(c.depot, b)
		return
	}
	for _, b := range blocks {
		c.putLocked(h, b)
	}
}

// freeDirect frees one block straight into the central list and counts it;
// on a closed heap it drops it (see get).
func (c *central) freeDirect(h *Heap, a uintptr) {
	c.mu.Lock()
	if !h.closed.Load() {
		c.putLocked(h, a)
		c.frees.Add(1)
	}
	c.mu.Unlock()
}

// putLocked returns one block to its span, and the span to the page heap
// when it is empty and the class already keeps enough empty spans.
func (c *central) putLocked(h *Heap, b uintptr) {
	page := uint32((b - h.pages.Base) >> pageShift) // PageOf, inline for region 0
	if b-h.pages.Base >= h.pages.Size {
		page, _ = h.pages.PageOfFar(b)
	}
	e := *h.pages.Entry(page)
	id := pageheap.WordSpan(e)
	s := spanAt(&h.pages, id)
	i, _ := blockIn(b, e, &classInfos[s.class])
	raceAcquire(ptr(b)) // race builds: after the block's last Free
	k := s.relocKind()
	s.put(&h.links, h.key, b, uint32(i)+1)
	c.spanFree++
	if !s.listed {
		c.push(h, id, s)
	}
	c.recount(&h.pages, s, k) // before s may be freed; an empty span counts in neither
	if s.empty() {
		if c.empty >= keepEmpty[c.class] {
			c.unlink(h, s)
			c.spanFree -= uint64(classBlocks[c.class])
			freeSpan(&h.pages, id, s)
		} else {
			c.empty++
		}
	}
}

// grow adds a new span to the front of the partial list.
func (c *central) grow(h *Heap) error {
	id, s, err := allocSpan(&h.pages, c.class)
	if err != nil {
		return err
	}
	c.push(h, id, s) // empty: no part in Relocate's summary
	c.empty++
	c.spanFree += uint64(classBlocks[c.class])
	return nil
}

// push puts span id at the front of the partial list.
func (c *central) push(h *Heap, id uint32, s *span) {
	s.prev = 0
	s.next = c.partial
	if c.partial != 0 {
		spanAt(&h.pages, c.partial).prev = id
	}
	c.partial = id
	s.listed = true
}

// unlink removes s from the partial list.
func (c *central) unlink(h *Heap, s *span) {
	if s.prev != 0 {
		spanAt(&h.pages, s.prev).next = s.next
	} else {
		c.partial = s.next
	}
	if s.next != 0 {
		spanAt(&h.pages, s.next).prev = s.prev
	}
	s.next, s.prev, s.listed = 0, 0, false
}

// trim empties the depot into the spans and gives every empty span of the
// class back to the page heap.
func (c *central) trim(h *Heap) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if h.closed.Load() {
		return
	}
	for _, b := range c.depot {
		for _, a := range b.blocks[:b.n] {
			c.putLocked(h, a)
		}
	}
	c.depot = c.depot[:0]
	c.spare = nil
	c.forget()
	for id := c.partial; id != 0; {
		s := spanAt(&h.pages, id)
		next := s.next
		if s.empty() { // no part in Relocate's summary, listed or not
			c.unlink(h, s)
			c.spanFree -= uint64(classBlocks[c.class])
			freeSpan(&h.pages, id, s)
			c.empty--
		}
		id = next
	}
}
