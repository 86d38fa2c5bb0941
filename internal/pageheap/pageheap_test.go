package pageheap

import (
	"errors"
	"testing"
	"time"
	"unsafe"
)

// The page heap on its own, with no offheap.Heap above it: made with the
// span lengths a caller hands it, its runs and spans, its census, its
// limit and its Close. The root package's tests drive it through a Heap.

// testSpanPages are the span lengths of three small classes, 1 to 3.
var testSpanPages = []uint8{0, 1, 2, 4}

// newTestHeap is a page heap of a 64 MiB first region and limit bytes (0:
// none), unmapped at the test's end.
func newTestHeap(t *testing.T, limit int64) *Heap {
	t.Helper()
	ph := new(Heap)
	if err := ph.Reserve(limit, 64<<20, false, time.Hour, false, testSpanPages); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ph.Close()
		if err := ph.Unmap(); err != nil {
			t.Error(err)
		}
	})
	return ph
}

// TestRunsAndCensus: a run of its own is marked in the pagemap on every
// page, counted in the census while it is allocated, and given back whole.
func TestRunsAndCensus(t *testing.T) {
	ph := newTestHeap(t, 0)
	a, _, err := ph.AllocRun(3, 1, ClassLarge)
	if err != nil {
		t.Fatal(err)
	}
	page, ok := ph.PageOf(a)
	if !ok || ph.Addr(page) != a {
		t.Fatalf("PageOf(%#x) = %d, %v; Addr of it %#x", a, page, ok, ph.Addr(page))
	}
	if e := *ph.Entry(page); WordClass(e) != ClassLarge || !WordRunStart(e) || WordPages(e) != 3 {
		t.Errorf("first page's word %#x: class %#x, start %v, pages %d", e, WordClass(e), WordRunStart(e), WordPages(e))
	}
	for i := uint32(1); i < 3; i++ {
		if e := *ph.Entry(page + i); WordClass(e) != ClassLarge || WordRunStart(e) {
			t.Errorf("page %d's word %#x: class %#x, start %v", i, e, WordClass(e), WordRunStart(e))
		}
	}
	*(*byte)(ptr(a + 3*PageSize - 1)) = 1 // the run's last byte is mapped and writable
	if first, np, ok := ph.RunHolding(a + PageSize + 5); !ok || first != a || np != 3 {
		t.Errorf("RunHolding inside the run = %#x, %d, %v; want %#x, 3, true", first, np, ok, a)
	}
	if c := ph.Census(); c.RunAllocs != 1 || c.RunFrees != 0 || c.RunPages != 3 || c.Mapped < 3*PageSize {
		t.Errorf("census with one run of 3 pages: %+v", c)
	}
	if ph.FreeRun(a+PageSize, ClassLarge) || ph.FreeRun(a, ClassArena) {
		t.Fatal("FreeRun took an address inside the run, or the run as another class's")
	}
	if !ph.FreeRun(a, ClassLarge) {
		t.Fatal("FreeRun refused the run")
	}
	if c := ph.Census(); c.RunAllocs != 1 || c.RunFrees != 1 || c.RunPages != 0 {
		t.Errorf("census after the free: %+v", c)
	}
	if e := *ph.Entry(page); WordClass(e) != 0 {
		t.Errorf("freed page's word %#x has class %#x", e, WordClass(e))
	}
}

// TestSpans: a span gets the words its caller makes and the length its
// class was given at Reserve, and its struct is made under the lock, after
// the words; a freed span's id is handed out again.
func TestSpans(t *testing.T) {
	ph := newTestHeap(t, 0)
	for c := uint8(1); c < uint8(len(testSpanPages)); c++ {
		np := uint32(testSpanPages[c])
		var start uintptr
		made := func(id uint32, s uintptr) {
			if ph.Mu.TryLock() {
				ph.Mu.Unlock()
				t.Error("made ran without the page heap's lock")
			}
			page, _ := ph.PageOf(s)
			if e := *ph.Entry(page); WordClass(e) != c || WordSpan(e) != id {
				t.Errorf("class %d: made ran before the words were written: %#x", c, e)
			}
			*(*uint64)(ph.SpanSlot(id)) = uint64(s)
			start = s
		}
		id, err := ph.AllocSpan(np, func(i, id uint32) uint64 { return SmallWord(c, i, id) }, made)
		if err != nil {
			t.Fatal(err)
		}
		page, _ := ph.PageOf(start)
		for i := range np {
			if e := *ph.Entry(page + i); WordClass(e) != c || WordIndex(e) != i || WordSpan(e) != id {
				t.Errorf("class %d, page %d of its span: word %#x", c, i, e)
			}
		}
		if *(*uint64)(ph.SpanSlot(id)) != uint64(start) {
			t.Errorf("class %d: the span's slot lost what made wrote", c)
		}
		var used []uint32
		ph.InUse(func(p uint32, e uint64) { used = append(used, p) })
		if len(used) != 1 || used[0] != page {
			t.Errorf("class %d: InUse saw pages %v, want [%d]", c, used, page)
		}
		ph.FreeSpan(id, start, np)
		var s2 uintptr
		again, err := ph.AllocSpan(np, func(i, id uint32) uint64 { return SmallWord(c, i, id) }, func(_ uint32, s uintptr) { s2 = s })
		if err != nil || again != id {
			t.Errorf("class %d: the freed span's id %d was not handed out again (%d, %v)", c, id, again, err)
		}
		ph.FreeSpan(again, s2, np)
	}
}

// TestLimitAndClose: past its limit the page heap refuses with ErrLimit and
// its figures, and after Close with ErrClosed; a refusal changes nothing.
func TestLimitAndClose(t *testing.T) {
	ph := newTestHeap(t, 4*PageSize)
	a, _, err := ph.AllocRun(4, 1, ClassLarge)
	if err != nil {
		t.Fatal(err)
	}
	before := ph.Census()
	if _, _, err := ph.AllocRun(1, 1, ClassLarge); !errors.Is(err, ErrLimit) {
		t.Fatalf("a run past the limit: %v, want ErrLimit", err)
	}
	if _, err := ph.AllocSpan(1, func(i, id uint32) uint64 { return SmallWord(1, i, id) }, func(uint32, uintptr) {
		t.Error("made ran for a refused span")
	}); !errors.Is(err, ErrLimit) {
		t.Fatalf("a span past the limit: %v, want ErrLimit", err)
	}
	if after := ph.Census(); after != before {
		t.Errorf("refusals changed the census: %+v, then %+v", before, after)
	}
	if !ph.FreeRun(a, ClassLarge) {
		t.Fatal("FreeRun refused the run")
	}
	ph.Close()
	if _, _, err := ph.AllocRun(1, 1, ClassLarge); !errors.Is(err, ErrClosed) {
		t.Fatalf("a run after Close: %v, want ErrClosed", err)
	}
	if c := ph.Census(); c.Mapped != 0 || c.Released != 0 {
		t.Errorf("a closed page heap reports memory: %+v", c)
	}
}

// TestSpanSlotStride: the span array's stride is what the span layer's
// struct takes, and the slots of two ids do not overlap.
func TestSpanSlotStride(t *testing.T) {
	ph := newTestHeap(t, 0)
	if d := uintptr(ph.SpanSlot(2)) - uintptr(ph.SpanSlot(1)); d != SpanBytes {
		t.Fatalf("span slots %d bytes apart, want SpanBytes (%d)", d, SpanBytes)
	}
	var s struct{ a, b, c, d uint64 }
	if unsafe.Sizeof(s) > SpanBytes {
		t.Fatal("a 32-byte struct does not fit a slot")
	}
}
