package pageheap

// The pagemap's encoding: one word per page, the only structure Free reads
// without a lock. Its constructors and accessors are here, and only here is
// a word's layout known: placeOf, the one decoder the slow paths share, and
// the fast paths' checks beside it (place.go) read a word through them.
//
//	bits  0-7   class: 0 free, a small class (a span's: below the number
//	            of classes the page heap was made with), or the class of a
//	            run of its own: classLarge, classArena, classGuarded,
//	            classSampled
//	bits  8-31  the page's index within its span (small), 0 or 1 (a run:
//	            first page or not; pageUnguarded on a guarded run's guard
//	            page); on a free page, pageDirty or 0
//	bits 32-63  the span's id (small), the run's page count (a run, on its
//	            first page); on a dirty free page, the tick it was freed in
//
// The pagemap changes only under Heap.Mu, and the word of a page that
// holds a live block does not change until the block is freed, so a Free of
// a live block reads a stable word.

import "unsafe"

// The classes of the runs of their own, in bits 0-7 of their pages' words.
const (
	ClassLarge   = 0xff // a large block
	ClassGuarded = 0xfe // a guarded block, or a spare or pool run of one
	ClassArena   = 0xfd // an arena's memory
	ClassSampled = 0xfc // a small block the profile sampled
)

const (
	PageDirty = 1 << 8 // on a free page: it holds data and is counted as mapped

	// pageUnguarded marks the word of an unguarded run's guard page (its
	// first heap page, a later page of the run, guard_maps.go): bits 8-31
	// of a run's later page say only "not a first page" otherwise.
	pageUnguarded = 1 << 9
)

// PageWordAt is the word of page in the pagemap at pmap: the read of Free's
// fast path and the checker's, which hold pmap one load closer than
// Heap.Entry.
//
//go:nosplit
func PageWordAt(pmap unsafe.Pointer, page uintptr) uint64 {
	return *(*uint64)(unsafe.Add(pmap, page*8))
}

// SmallWord is the word of page i of span id, of small class c.
func SmallWord(c uint8, i, id uint32) uint64 { return uint64(c) | uint64(i)<<8 | uint64(id)<<32 }

// runWord is the word of the first page of a run of its own of np pages,
// of class.
func runWord(class uint8, np uint32) uint64 { return uint64(class) | uint64(np)<<32 }

// runTailWord is the word of every later page of a run of its own.
func runTailWord(class uint8) uint64 { return uint64(class) | 1<<8 }

// dirtyWord is the word of a free page that holds data, freed in tick t.
func dirtyWord(t uint32) uint64 { return PageDirty | uint64(t)<<32 }

// WordClass is the class of a page's word: 0 free, a small class, or a
// run's class.
func WordClass(e uint64) uint8 { return uint8(e) }

// WordSpan is the span id of a small span's page.
func WordSpan(e uint64) uint32 { return uint32(e >> 32) }

// WordPages is the page count of a run of its own, on its first page.
func WordPages(e uint64) uint32 { return uint32(e >> 32) }

// wordTick is the release tick of a dirty free page.
func wordTick(e uint64) uint32 { return uint32(e >> 32) }

// WordIndex is bits 8-31: a small span's page index in its span, or, for a
// run of its own, 0 on its first page and nonzero on the others.
func WordIndex(e uint64) uint32 { return uint32(e) >> 8 }

// WordRunStart reports whether e is the word of a run's first page.
func WordRunStart(e uint64) bool { return WordIndex(e) == 0 }

// wordDirty reports whether a free page's word says it holds data.
func wordDirty(e uint64) bool { return e&PageDirty != 0 }

// markUnguarded sets pageUnguarded in the guard page's word at w.
func markUnguarded(w *uint64) { *w |= pageUnguarded }

// wordUnguarded reports whether a guard page's word says its run has no
// guard page.
func wordUnguarded(e uint64) bool { return e&pageUnguarded != 0 }
