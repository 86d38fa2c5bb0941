package offheap

import "github.com/offheap/offheap/internal/pageheap"

// Double frees of small blocks in fast mode, caught nearly for free, the way
// glibc's tcache catches them.
//
// The heap has a key, a random word chosen at NewHeap. Every Free of a small
// block writes the key into the block's second word, and every Alloc and
// AllocUnzeroed clears it: a free block holds the key, a live one does not
// unless the program put it there. Free reads the word before it writes it.
// If the key is there, the block is probably free already, and Free makes
// an exact check before it panics (freeState, through freeable in place.go,
// which Realloc and Relocate take too): it looks for the block wherever a
// free block can be. A live block whose second word happens to hold the key
// (once in 2^64 for random data) is found nowhere and is freed as usual; it
// costs that Free a stop of the world, no false report.
//
// Why the second word: a free block waits in a magazine (untouched), a
// depot batch (untouched) or its span's free list, which links blocks
// through their first word, so the key stays put wherever the block waits
// until an Alloc hands it out again. At a fixed offset it costs the fast
// path no size lookup: Alloc's zeroing of n > 8 bytes reaches it (a partly
// zeroed word is no longer the key, whose low byte is not zero), and
// AllocUnzeroed clears it with one store. A Shared keeps its count in the
// same word: the key is hugely negative, as the count a last
// release leaves (countDead), so a Retain or Release of a freed handle
// still finds the count at or below zero and panics. An 8-byte block has no
// second word, and its one word is the free list's link once the block is
// back on its span: 8-byte blocks carry no key, and fast mode does not see
// their double frees.
//
// What the key does not catch (checked mode catches all of it, with stacks):
// a second Free after the block was allocated again (it then frees the new
// owner's block: no allocator can tell), two Frees of one block racing each
// other, a double free that races with the block moving between a magazine
// and the central list, and 8-byte blocks. Large blocks need no key: their
// pagemap words say whether they are free (freeSlow).
//
// The exact check holds the class's central lock and the magazine lock,
// takes every magazine out of service and quiesces, as Trim does, so that
// it reads every magazine while nothing changes one; the depot and the span
// are the central lock's. A block between a magazine and the central list
// (a refill or spill in progress) is in neither and goes unseen: a double
// free racing with that is missed, and a live block is never reported.

// A block's state, as freeState finds it.
const (
	blockLive     = iota // in none of the places a free block waits
	blockFree            // in a magazine, a depot batch or its span's free list
	blockUncarved        // in its span's tail that was never handed out
	blockCorrupt         // not known: its span's free list was written after free
)

// freeState is the exact check: where the block of class c at a is, which
// placeOf found as block index of span. It returns blockCorrupt, and the
// corruption in bad, if the walk of the span's free list found a block
// written after its Free: the list is abandoned, and whether a was on it
// is not known.
func (h *Heap) freeState(a uintptr, c uint8, span, index uint32, bad **corruptError) int {
	cen := &h.central[c]
	cen.mu.Lock()
	defer cen.mu.Unlock()
	ms := &h.mags
	ms.mu.Lock()
	defer ms.mu.Unlock()
	// Out of service and quiesced, the magazines hold still; installing
	// new ones waits for mu, and every refill and spill of class c for the
	// central lock.
	var taken []*magazine
	var pids []int
	for pid := range ms.at {
		if m := ms.at[pid].Swap(nil); m != nil {
			taken, pids = append(taken, m), append(pids, pid)
		}
	}
	defer func() {
		for i, m := range taken {
			ms.at[pids[i]].Store(m)
		}
	}()
	if len(taken) > 0 {
		quiesce()
	}
	for _, m := range taken {
		for _, b := range m.slots[c][:m.cls[c].n] {
			if b == a {
				return blockFree
			}
		}
	}
	for _, bt := range cen.depot {
		for _, b := range bt.blocks[:bt.n] {
			if b == a {
				return blockFree
			}
		}
	}
	if h.cachedAt(a, c) {
		return blockFree
	}
	// Spans of class c are made and given back under cen.mu: if a's page
	// still names the span placeOf found, it stays a's until the unlock;
	// if not, it went back to the page heap since, with every block free.
	page, _ := h.pages.PageOf(a)
	if e := *h.pages.Entry(page); pageheap.WordClass(e) != c || pageheap.WordSpan(e) != span {
		return blockFree
	}
	s := spanAt(&h.pages, span)
	if index >= s.carved {
		return blockUncarved
	}
	i := s.free
	for rest := s.nfree; rest > 0; rest-- {
		b := s.block(i)
		if b == a {
			return blockFree
		}
		var ok bool
		if i, ok = s.follow(&h.links, h.key, b, rest-1); !ok {
			if s.empty() {
				cen.empty-- // it will not be, abandoned
			}
			*bad = cen.abandon(h, s, b)
			return blockCorrupt
		}
	}
	return blockLive
}
