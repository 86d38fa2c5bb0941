package offheap

import (
	"testing"

	"github.com/offheap/offheap/internal/pageheap"
)

// TestSizeClassLookup checks every small size maps to the smallest class that
// holds it.
func TestSizeClassLookup(t *testing.T) {
	for n := 1; n <= maxSmall; n++ {
		c := sizeClass(n)
		if c == 0 || c >= numClasses {
			t.Fatalf("sizeClass(%d) = %d, out of range", n, c)
		}
		if int(classSize[c]) < n {
			t.Fatalf("sizeClass(%d) = %d of size %d: too small", n, c, classSize[c])
		}
		if c > 1 && int(classSize[c-1]) >= n {
			t.Fatalf("sizeClass(%d) = %d, but class %d (size %d) fits", n, c, c-1, classSize[c-1])
		}
	}
}

// TestSizeClassShape checks the table's promises: alignment, waste and span
// fit, at every span tier.
func TestSizeClassShape(t *testing.T) {
	if classSize[numClasses-1] != maxSmall {
		t.Fatalf("largest class is %d, want %d", classSize[numClasses-1], maxSmall)
	}
	for c := 1; c < numClasses; c++ {
		size := int(classSize[c])
		if size > 8 && size%16 != 0 {
			t.Errorf("class %d size %d is not 16-byte aligned", c, size)
		}
		span := int(classPages[c]) * pageSize
		if int(classBlocks[c]) != span/size {
			t.Errorf("class %d: %d blocks, want %d", c, classBlocks[c], span/size)
		}
		for tier := range spanTiers {
			pages := int(tierPages[tier][c])
			span := pages * pageSize
			if tail := span % size; tail*8 > span {
				t.Errorf("class %d, tier %d: tail waste %d of %d is above 1/8", c, tier, tail, span)
			}
			// A span is at least its tier's OS page, so that emptied it
			// goes back to the OS alone, and never longer than the last
			// tier's, which bounds the division's range (TestDivMulExact).
			least := 1 << tier
			if tier == 0 && size < 1024 {
				least = 2 // one-page spans of small blocks cost a Relocate pass more than they save
			}
			if pages < least || pages > int(tierPages[spanTiers-1][c]) {
				t.Errorf("class %d, tier %d: %d pages, want %d to %d", c, tier, pages, least, tierPages[spanTiers-1][c])
			}
		}
		if prev := int(classSize[c-1]); size > 256 && float64(size-prev-1)/float64(size) > 0.125 {
			t.Errorf("class %d: worst internal waste above 1/8", c)
		}
	}
}

// TestDivMulExact checks that Free's multiply-and-shift division is exact for
// every offset in every span: a block start has remainder 0, and nothing
// else does.
func TestDivMulExact(t *testing.T) {
	for c := 1; c < numClasses; c++ {
		size := uint64(classSize[c])
		span := uint64(tierPages[spanTiers-1][c]) * pageSize // every tier's longest
		for o := uint64(0); o < span; o++ {
			if q := o * classDivMul[c] >> 40; q != o/size {
				t.Fatalf("class %d: %d*divMul>>40 = %d, want %d", c, o, q, o/size)
			}
		}
	}
}

// TestDivMulControl is the positive control for TestDivMulExact: rounding
// the reciprocal down instead of up must break the division somewhere, or
// that test could not fail.
func TestDivMulControl(t *testing.T) {
	broken := 0
	for c := 1; c < numClasses; c++ {
		size := uint64(classSize[c])
		floor := uint64(1<<40) / size
		for o := size; o < uint64(tierPages[spanTiers-1][c])*pageSize; o += size {
			if o*floor>>40 != o/size {
				broken++
				break
			}
		}
	}
	if broken == 0 {
		t.Fatal("a rounded-down reciprocal divided exactly everywhere: TestDivMulExact cannot tell good from bad")
	}
}

// TestSpanTier checks that this process's spans are its OS page's: the
// simulated 16 and 64 KiB pages (internal/osmem) choose their tiers as a
// kernel with those pages does, and no span is shorter than an OS page.
func TestSpanTier(t *testing.T) {
	want := map[uint32]int{1: 0, 2: 1, 4: 2, 8: 3, 16: 3}[pageheap.OSPagePages]
	if spanTier != want {
		t.Fatalf("OS page of %d heap pages: span tier %d, want %d", pageheap.OSPagePages, spanTier, want)
	}
	for c := 1; c < numClasses; c++ {
		if uint32(classPages[c]) < min(pageheap.OSPagePages, 8) {
			t.Errorf("class %d: a span of %d pages, under the OS page's %d", c, classPages[c], pageheap.OSPagePages)
		}
	}
}

// TestKeepEmpty: a class whose blocks are all freed keeps keepEmptyPages of
// empty spans for reuse (one span's worth when spans are that large) and
// gives the rest back to the page heap.
func TestKeepEmpty(t *testing.T) {
	if buildChecked {
		t.Skip("checked mode's quarantine holds freed blocks back from their spans")
	}
	h := newTestHeap(t, unprofiled(Options{MagazineDepth: -1}))
	c := sizeClass(64)
	per := int(classBlocks[c])
	var bs [][]byte
	for range 10 * per {
		bs = append(bs, h.Alloc(64))
	}
	for _, b := range bs {
		h.Free(b) // no Trim, which gives every empty span back
	}
	// Every span is empty now: what the class holds is what it keeps.
	kept, span, most := h.Stats().SpanFreeBytes, uint64(per)*64, uint64(keepEmptyPages)*pageSize
	if kept > max(span, most) || kept+span <= most {
		t.Fatalf("SpanFreeBytes %d after every block was freed: want %d KiB of empty %d KiB spans, or one span", kept, most>>10, span>>10)
	}
}
