package offheap

// What is at an address: the one reading of the pagemap that the slow
// paths share. placeOf says what an address is as the pagemap tells it;
// freeable adds whether a block there is free, and is the one decision of
// what Free, Realloc and Relocate (RelocateAll through it) take and what
// they refuse; refusal words the refusal. The checker's blockOf, Lookup
// and Ref ask placeOf too. The fast paths (Free's, Local.Free's,
// Relocate's dense check, RelocateAll's batch) test the same encoding
// inline with smallStart or blockStart (fastpath.go), and send what they
// do not take here. The word's bits are internal/pageheap/pagemap.go's:
// placeOf reads them through its accessors.

import (
	"fmt"
	"github.com/offheap/offheap/internal/pageheap"
)

// placeKind is what an address of a heap is.
type placeKind uint8

const (
	placeForeign  placeKind = iota // outside this heap's address space
	placeFreePage                  // on a page no span or run holds: free, or never handed out
	placeSmall                     // the start of a small block
	placeInSmall                   // inside a small block, past its start
	placeShared                    // a live Shared's bytes, inside its small block
	placeTail                      // in a span's tail, past its last block
	placeRun                       // the start of a large block or a profiled sample
	placeInRun                     // inside a large block or a profiled sample, past its start
	placeGuarded                   // on a guarded run's pages: the checker knows its blocks
	placeArena                     // an Arena's memory
	placeFreed                     // the start of a block that is free (freeable)
	placeUncarved                  // the start of a block its span never handed out (freeable)
)

// place is what is at an address: its kind, the pagemap's class there (a
// small class, pageheap.ClassLarge or pageheap.ClassSampled), and the block that holds it,
// its start and usable bytes, where there is one (placeSmall to placeInRun,
// placeFreed, placeUncarved; placeInRun's start is 0 when the run went
// away meanwhile), and a small block's span and index in it.
type place struct {
	kind  placeKind
	class uint8
	span  uint32
	index uint32
	start uintptr
	size  uintptr
}

// placeOf is what the pagemap says is at address a. It reads a's pagemap
// word and, for an address inside a small block, the block's first word
// (sharedBlock): it cannot tell a freed small block from a live one while
// its span is in use, nor a freed sample the profile keeps from a live one
// (freeable can). The word of a page that holds a live block does not
// change while the block lives, so for a live block the answer is exact;
// for memory the caller does not own it is a snapshot. Called between
// enter and exit.
func (h *Heap) placeOf(a uintptr) place {
	page, ok := h.pages.PageOf(a)
	if !ok {
		return place{kind: placeForeign}
	}
	e := *h.pages.Entry(page)
	switch c := pageheap.WordClass(e); {
	case isSmall(c):
		ci := &classInfos[c]
		q, into := blockIn(a, e, ci)
		p := place{kind: placeSmall, class: c, span: pageheap.WordSpan(e), index: uint32(q), start: a - uintptr(into), size: uintptr(ci.size)}
		switch {
		case q >= uint64(ci.blocks):
			p.kind, p.start, p.size = placeTail, 0, 0
		case into != 0 && sharedBlock(p.start, a):
			p.kind = placeShared
		case into != 0:
			p.kind = placeInSmall
		}
		return p
	case c == pageheap.ClassLarge || c == pageheap.ClassSampled:
		// The first page of a run holds its length; a later page has 1<<8.
		if pageheap.WordRunStart(e) && a&(pageSize-1) == 0 {
			return place{kind: placeRun, class: c, start: a, size: uintptr(pageheap.WordPages(e)) << pageShift}
		}
		p := place{kind: placeInRun, class: c}
		if start, np, ok := h.pages.RunHolding(a); ok {
			p.start, p.size = start, uintptr(np)<<pageShift
			if sharedBlock(start, a) { // a large or sampled Shared's block
				p.kind = placeShared
			}
		}
		return p
	case c == pageheap.ClassGuarded:
		return place{kind: placeGuarded, class: c}
	case c == pageheap.ClassArena:
		return place{kind: placeArena, class: c}
	default:
		return place{kind: placeFreePage}
	}
}

// freeable is placeOf with the state of the block that starts at a: a small
// block whose second word holds the heap's key is looked for wherever a
// free block waits (freeState), and a profiled sample's start in the
// profile's stash, where a freed sample's run waits with its pagemap word
// unchanged; either reads placeFreed when found, and a small block its span
// never handed out placeUncarved. It is what Free's slow path, Realloc and
// Relocate take a block for: a placeSmall, placeRun or placeGuarded (the
// checker's to judge) they serve; every other place they refuse, with
// refusal's message. A free list found written after free is abandoned and
// panics here. Called between enter and exit, with no lock
// held.
func (h *Heap) freeable(a uintptr) place {
	p := h.placeOf(a)
	switch p.kind {
	case placeSmall:
		if h.keyed(a, p.class) {
			var bad *corruptError
			switch h.freeState(a, p.class, p.span, p.index, &bad) {
			case blockCorrupt:
				panic(bad.Error())
			case blockFree:
				p.kind = placeFreed
			case blockUncarved:
				p.kind = placeUncarved
			}
		}
	case placeRun:
		if p.class == pageheap.ClassSampled && h.prof != nil && h.prof.kept(a) {
			p.kind = placeFreed
		}
	}
	return p
}

// refusal is the panic of op (Free, Realloc, Relocate...) given the n bytes
// at a, which p says are no block op takes. A block found free is a double
// free, but for Relocate, which frees the block it moves.
func (p place) refusal(op string, a uintptr, n int) string {
	if p.kind == placeFreed && op != "Relocate" {
		return fmt.Sprintf("offheap: double free of %#x (%d bytes): the block is already free; free each block once "+
			"(Options.Checked, or the offheapchecked build tag, reports where it was allocated and first freed)", a, p.size)
	}
	msg := fmt.Sprintf("offheap: %s of %#x (%d bytes), which %s", op, a, n, p.why(a))
	if p.kind == placeShared {
		msg = fmt.Sprintf("offheap: %s of %#x (%d bytes), the bytes of a Shared", op, a, n)
	}
	if way := p.wayOut(op); way != "" {
		msg += ": " + way
	}
	return msg
}

// why says what is at a, completing "... of %#x, which ...".
func (p place) why(a uintptr) string {
	switch p.kind {
	case placeForeign:
		return "this heap did not allocate: it is another heap's block, or Go memory"
	case placeInSmall:
		return fmt.Sprintf("is not the start of a block: it is %s into the %d-byte block at %#x", count(int(a-p.start), "byte"), p.size, p.start)
	case placeShared:
		return fmt.Sprintf("is a Shared's bytes, %s into its %d-byte block at %#x", count(int(a-p.start), "byte"), p.size, p.start)
	case placeTail:
		return "is not allocated: it is past the last block of its span"
	case placeInRun:
		if p.start == 0 {
			return "is not the start of a block: it is inside a large block"
		}
		return fmt.Sprintf("is not the start of a block: it is %s into the block at %#x, of %s", count(int(a-p.start), "byte"), p.start, count(int(p.size>>pageShift), "page"))
	case placeArena:
		return "belongs to an Arena"
	case placeFreed:
		return "is already free"
	case placeUncarved:
		return "is not allocated (never handed out)"
	case placeSmall, placeRun:
		return "is a block in use"
	case placeGuarded:
		return "is on a guarded block's pages"
	default:
		return "is not allocated (already freed, or never handed out)"
	}
}

// wayOut says what to do instead, for op's refusal of a place of p's kind,
// or "" where why says it all.
func (p place) wayOut(op string) string {
	move := op == "Relocate"
	switch p.kind {
	case placeForeign:
		return appendMoved
	case placeShared:
		if move {
			return "a Shared's block does not move while it is retained"
		}
		return "a Shared is freed by its last Release, not by Free"
	case placeArena:
		if move {
			return "an arena's memory does not move, and is freed all at once by the arena's Reset or Release"
		}
		return "an arena's memory is freed all at once, by the arena's Reset or Release"
	case placeFreed: // Relocate's: Free's and Realloc's is refusal's double free
		return "Relocate frees the block it moves, so relocate a block only while it is live " +
			"(" + checkedStacks + ")"
	case placeInSmall, placeInRun:
		return "pass " + op + " " + blockStartOnly
	case placeTail, placeFreePage, placeUncarved:
		return "the slice is stale or made up (" + checkedStacks + ")"
	}
	return ""
}
