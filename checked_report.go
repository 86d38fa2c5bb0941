package offheap

// What checked mode reports: the errors Free panics with and Close returns,
// and Lookup's view of a block, built from the records
// and the stacks they name.

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/offheap/offheap/internal/pageheap"
)

// ErrorKind says what a MemoryError caught.
type ErrorKind int

const (
	DoubleFree     ErrorKind = iota + 1 // a Free of a block already freed
	InvalidFree                         // a Free of no live block's start: Go memory, b[1:], a block long freed
	ForeignFree                         // a Free of another heap's block
	WriteAfterFree                      // a write into a freed block, found as it leaves quarantine or at Close
	Corrupted                           // a block whose canary (past its end) or metadata was overwritten
	UseAfterFree                        // Ref or Bytes of a freed block, or a fault on a freed guarded block
	OverRelease                         // a Release of a Hot Shared's reference that was not held
	OutOfBounds                         // a fault past the end of a live guarded block
)

// String names the kind in words: "double free", "invalid free", and so on.
func (k ErrorKind) String() string {
	switch k {
	case DoubleFree:
		return "double free"
	case InvalidFree:
		return "invalid free"
	case ForeignFree:
		return "foreign free"
	case WriteAfterFree:
		return "write after free"
	case Corrupted:
		return "corrupted block"
	case UseAfterFree:
		return "use after free"
	case OverRelease:
		return "release past zero"
	case OutOfBounds:
		return "access out of bounds"
	}
	return fmt.Sprintf("ErrorKind(%d)", int(k))
}

// MemoryError is what a checked heap's Free panics with (and Close returns,
// for writes after free found in quarantine; Ref and Bytes panic with it for
// a freed block). Recover it with errors.As.
type MemoryError struct {
	Kind       ErrorKind // what went wrong
	Addr       uintptr   // the address freed, the block written after free, or the address that faulted
	Size       int       // the block's size in bytes, 0 if unknown
	AllocStack string    // where the block was allocated ("" if unknown)
	FreeStack  string    // where it was first freed, for DoubleFree and WriteAfterFree
	AgainStack string    // the refused call: the second Free, the Release, or the faulting access
	detail     string
}

// Error names the kind, address and size, and prints the stacks.
func (e *MemoryError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "offheap: %s of %#x", e.Kind, e.Addr)
	if e.Size > 0 {
		fmt.Fprintf(&b, " (%d bytes)", e.Size)
	}
	if e.detail != "" {
		b.WriteString(": ")
		b.WriteString(e.detail)
	}
	again := "\nfreed again at:\n"
	switch {
	case e.Kind == OverRelease:
		again = "\nreleased at:\n"
	case e.Kind == OutOfBounds || e.Kind == UseAfterFree && e.AgainStack != "":
		again = "\nfaulted at:\n"
	}
	for _, st := range [...]struct{ head, stack string }{
		{"\n\nallocated at:\n", e.AllocStack},
		{"\nfirst freed at:\n", e.FreeStack},
		{again, e.AgainStack},
	} {
		if st.stack != "" {
			b.WriteString(st.head)
			b.WriteString(st.stack)
		}
	}
	return b.String()
}

// Leak is a block still live when its heap was closed, or when
// Heap.Leaks was called.
type Leak struct {
	Addr  uintptr // the block's start; for a Shared, its bytes' (Bytes)
	Size  int     // the size it was allocated with; for a Shared, NewShared's n
	Stack string  // where it was allocated
}

// LeakError is what Close returns, and Heap.Leaks, for a checked (or
// sampled) heap with live blocks: every one, by address.
type LeakError struct {
	Leaks []Leak

	open bool // from Heap.Leaks: the heap was open
}

// LeakGroup is the leaks allocated at one stack: see LeakError.Groups.
type LeakGroup struct {
	Stack string // where they were allocated
	Bytes int    // the sum of their sizes
	Leaks []Leak // the blocks, by address
}

// Groups returns the leaks grouped by the stack that allocated them, the
// group with the most bytes first (then the most blocks, then by stack).
func (e *LeakError) Groups() []LeakGroup {
	at := make(map[string]int) // stack: index in gs
	var gs []LeakGroup
	for _, l := range e.Leaks {
		i, ok := at[l.Stack]
		if !ok {
			i = len(gs)
			at[l.Stack] = i
			gs = append(gs, LeakGroup{Stack: l.Stack})
		}
		gs[i].Bytes += l.Size
		gs[i].Leaks = append(gs[i].Leaks, l)
	}
	slices.SortFunc(gs, func(x, y LeakGroup) int {
		return cmp.Or(cmp.Compare(y.Bytes, x.Bytes), cmp.Compare(len(y.Leaks), len(x.Leaks)), cmp.Compare(x.Stack, y.Stack))
	})
	return gs
}

const (
	// maxGroupsShown is how many groups of leaks Error prints.
	maxGroupsShown = 10
	// maxAddrsShown is how many addresses Error prints for a group.
	maxAddrsShown = 4
)

// Error counts the leaks and prints the largest groups (Groups) with their
// stacks and first blocks.
func (e *LeakError) Error() string {
	total := 0
	for _, l := range e.Leaks {
		total += l.Size
	}
	gs := e.Groups()
	var b strings.Builder
	when := "still live at Close"
	if e.open {
		when = "live"
	}
	fmt.Fprintf(&b, "offheap: leak: %s (%s) %s, allocated at %d %s", count(len(e.Leaks), "block"), count(total, "byte"), when, len(gs), plural(len(gs), "place"))
	for i, g := range gs {
		if i == maxGroupsShown {
			blocks, bytes := 0, 0
			for _, g := range gs[i:] {
				blocks += len(g.Leaks)
				bytes += g.Bytes
			}
			fmt.Fprintf(&b, "\n\n... and %d more %s: %s, %s", len(gs)-i, plural(len(gs)-i, "place"), count(blocks, "block"), count(bytes, "byte"))
			break
		}
		fmt.Fprintf(&b, "\n\n%s, %s, allocated at:\n", count(len(g.Leaks), "block"), count(g.Bytes, "byte"))
		if g.Stack == "" {
			b.WriteString("(unknown)\n")
		} else {
			b.WriteString(g.Stack)
		}
		b.WriteString("at ")
		for k, l := range g.Leaks {
			if k == maxAddrsShown {
				fmt.Fprintf(&b, " and %d more", len(g.Leaks)-k)
				break
			}
			if k > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%#x (%s)", l.Addr, count(l.Size, "byte"))
		}
	}
	return b.String()
}

// Leaks reports the blocks of a checked heap that are live now, as the
// *LeakError Close would return, or nil if there are none; after Close, the
// one Close returned. A fast heap keeps no record of its blocks and returns
// nil; a sampled heap (GuardOneIn) lists its sampled blocks. It walks every
// page in use: for tests and debugging.
func (h *Heap) Leaks() *LeakError {
	c := h.chk
	if c == nil {
		return nil
	}
	if !h.enter() {
		return c.closeLeaks.Load() // nil until Close has its list
	}
	defer h.exit()
	if leaks := c.leaks(); len(leaks) > 0 {
		return &LeakError{Leaks: leaks, open: true}
	}
	return nil
}

// MemoryErrors returns the memory errors a checked (or sampled) heap has
// found so far, oldest first, up to 100, whether or not their panics were
// recovered. A fast heap returns nil.
func (h *Heap) MemoryErrors() []*MemoryError {
	if c := h.chk; c != nil {
		return c.found.list()
	}
	return nil
}

// BlockInfo describes a checked block: see Heap.Lookup.
type BlockInfo struct {
	Start      uintptr // the block's first byte
	Size       int     // the size it was allocated with
	Freed      bool    // freed, and still in quarantine (its address not yet reused)
	Guarded    bool    // on pages of its own, with a guard page after it
	AllocStack string  // where it was allocated
	FreeStack  string  // where it was freed, if Freed
}

// Lookup reports the checked block that addr falls in, live or freed but
// still in quarantine, guard page included: how to name the block behind a
// fault address. A fast heap, a closed heap and an unknown address report
// false.
func (h *Heap) Lookup(addr uintptr) (BlockInfo, bool) {
	c := h.chk
	if c == nil || !h.enter() {
		return BlockInfo{}, false
	}
	defer h.exit()
	return c.info(addr)
}

// allocStack returns where the block containing addr was allocated, or "" if
// the heap does not know (fast mode). Shared uses it to name a handle's
// origin when it is released past zero.
func (h *Heap) allocStack(addr uintptr) string {
	if info, ok := h.Lookup(addr); ok {
		return info.AllocStack
	}
	return ""
}

// info describes the checked block that a falls in, if the checker knows
// it. Called between enter and exit. A racy read of the record, fine for a
// report: it is copied before it is formatted.
func (c *checker) info(a uintptr) (BlockInfo, bool) {
	start, cl, r := c.blockOf(a)
	if r == nil {
		return BlockInfo{}, false
	}
	st, size, alloc, free := atomic.LoadUint32(&r.state), r.size, r.alloc, r.free
	if st != stateLive && st != stateFreed {
		return BlockInfo{}, false
	}
	info := BlockInfo{Start: start, Size: int(size), Freed: st == stateFreed, Guarded: cl == pageheap.ClassGuarded, AllocStack: stackText(alloc)}
	if info.Freed {
		info.FreeStack = stackText(free)
	}
	return info, true
}

// unknownFree builds the error for a Free of an address with no live or
// freed record. Called between enter and exit.
func (c *checker) unknownFree(a uintptr) *MemoryError {
	if c.h.pages.Contains(a) {
		if start, _, _ := c.blockOf(a); start != 0 && start != a {
			if sharedBlock(start, a) {
				return &MemoryError{Kind: InvalidFree, Addr: a,
					detail: "the bytes of a Shared: a Shared is freed by its last Release, not by Free"}
			}
			if info, ok := c.info(start); ok {
				return &MemoryError{Kind: InvalidFree, Addr: a, Size: info.Size, AllocStack: info.AllocStack,
					detail: fmt.Sprintf("not the start of a block: it is %s into the block at %#x: pass %s",
						count(int(a-start), "byte"), start, blockStartOnly)}
			}
		}
		return &MemoryError{Kind: InvalidFree, Addr: a,
			detail: "not allocated: not a live block of this heap (never handed out, or freed long ago and out of quarantine)"}
	}
	if other := lookupHeap(a); other != nil {
		e := &MemoryError{Kind: ForeignFree, Addr: a, detail: "this heap did not allocate it: the block belongs to another heap"}
		if info, ok := other.h.Lookup(a); ok {
			e.Size, e.AllocStack = info.Size, info.AllocStack
		}
		return e
	}
	return &MemoryError{Kind: InvalidFree, Addr: a,
		detail: "this heap did not allocate it, nor did any other checked heap (Go memory, or a fast heap's): " + appendMoved}
}

// notLive builds the error for a Free, by a caller at again, of the block a
// whose record r is not live. Called between enter and exit.
func (c *checker) notLive(a uintptr, r *record, again stackID) *MemoryError {
	switch atomic.LoadUint32(&r.state) {
	case stateFreed, stateFreeing:
		e := &MemoryError{Kind: DoubleFree, Addr: a, Size: int(r.size), detail: "the block is not allocated (already freed)"}
		e.AllocStack, e.FreeStack, e.AgainStack = stackText(r.alloc), stackText(r.free), stackText(again)
		return e
	case stateNone:
		return c.unknownFree(a)
	}
	return &MemoryError{Kind: Corrupted, Addr: a, detail: "its metadata was overwritten (invalid state); the block is left as it is"}
}

// corrupted is the error for a Free of the block at a whose record's seal
// does not hold.
func corrupted(a uintptr) *MemoryError {
	return &MemoryError{Kind: Corrupted, Addr: a, detail: "its metadata was overwritten (checksum mismatch); the block is left as it is"}
}

// overrun is the error for a Free of the block at a, of size bytes and
// allocated at alloc, whose canary was overwritten.
func overrun(a uintptr, size uint64, alloc stackID) *MemoryError {
	return &MemoryError{Kind: Corrupted, Addr: a, Size: int(size), AllocStack: stackText(alloc),
		detail: "the bytes past its length were overwritten (an unsafe write past len); the block is freed"}
}

// writeAfterFree is the error for the block at a, of pagemap class cl, that
// left the quarantine with the first n bytes' poison overwritten.
func (c *checker) writeAfterFree(a uintptr, cl uint8, n uintptr) *MemoryError {
	e := &MemoryError{Kind: WriteAfterFree, Addr: a, detail: "a freed block in quarantine was written to"}
	if cl != pageheap.ClassArena { // an arena's run has no record
		r := c.rec(a)
		e.Size, e.AllocStack, e.FreeStack = int(r.size), stackText(r.alloc), stackText(r.free)
	}
	if first := firstDiff(bytesAt(a, int(n))); first >= 0 {
		e.detail = fmt.Sprintf("byte %d of the freed block was overwritten (found when it left the quarantine)", first)
	}
	return e
}

// leaks lists every block still live, by address: the carved blocks of
// every span and the block of every run whose record is live; in a sampled
// heap, whose checker has records of guarded blocks alone, those. Called by
// Close once nothing else runs on the heap.
func (c *checker) leaks() []Leak {
	var leaks []Leak
	found := func(a uintptr, r *record) {
		if c.live(r, a) {
			l := Leak{Addr: a, Size: int(r.size), Stack: stackText(r.alloc)}
			if n, ok := c.h.liveShared(a); ok { // a Shared's block: its bytes
				l.Addr, l.Size = a+sharedHdr, n
			}
			leaks = append(leaks, l)
		}
	}
	ph := &c.h.pages
	ph.InUse(func(page uint32, e uint64) {
		switch cl := pageheap.WordClass(e); {
		case !c.all && cl != pageheap.ClassGuarded:
		case cl < numClasses:
			s := spanAt(ph, pageheap.WordSpan(e))
			size := uintptr(classSize[cl])
			for q := uintptr(0); q < uintptr(s.carved); q++ {
				found(s.start+q*size, c.rec(s.start+q*size))
			}
		case cl == pageheap.ClassLarge:
			found(ph.Addr(page), c.rec(ph.Addr(page)))
		case cl == pageheap.ClassGuarded:
			if a, r := c.guardedBlock(ph.Addr(page)); r != nil {
				found(a, r)
			}
		}
	})
	slices.SortFunc(leaks, func(x, y Leak) int { return cmp.Compare(x.Addr, y.Addr) })
	return leaks
}

// lookupHeap returns the checked heap whose address range holds a, or nil.
func lookupHeap(a uintptr) *checker {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	for _, c := range registry.heaps {
		if c.h.pages.Contains(a) {
			return c
		}
	}
	return nil
}
