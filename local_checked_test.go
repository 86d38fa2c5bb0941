package offheap

import (
	"strings"
	"testing"

	"github.com/offheap/offheap/internal/pageheap"
)

// TestLocalCheckedReports: a checked heap's Local reports what the heap
// reports, with stacks that start in the program, not in the Local.
func TestLocalCheckedReports(t *testing.T) {
	for _, n := range corpusSizes {
		h := checkedHeap(t, Options{})
		c := h.NewLocal()
		b := c.Alloc(n)
		c.Free(b)
		me := memoryError(t, func() { c.Free(b) })
		if me.Kind != DoubleFree || me.Addr != addrOf(b) || me.Size != n {
			t.Fatalf("n=%d: %v", n, me)
		}
		for what, st := range map[string]string{"alloc": me.AllocStack, "free": me.FreeStack, "again": me.AgainStack} {
			wantStack(t, what, st, "TestLocalCheckedReports")
			if strings.Contains(st, "offheap.(*Local)") {
				t.Errorf("%s stack shows the Local's frames:\n%s", what, st)
			}
		}
		b = c.Alloc(n + 1)
		me = memoryError(t, func() { c.Free(b[1:]) })
		if me.Kind != InvalidFree {
			t.Fatalf("n=%d, interior Free: %v", n, me)
		}
		c.Free(b)
		c.Close()
		closeClean(t, h)
	}
}

// TestLocalCheckedConcurrentUse: in checked mode a Local call made while
// another goroutine is inside one panics, saying so; the Local works again
// once the other call ends. The other goroutine's call is held open by
// holdCache, so the test does not depend on timing.
func TestLocalCheckedConcurrentUse(t *testing.T) {
	h := checkedHeap(t, Options{})
	c := h.NewLocal()
	defer c.Close()
	b := c.Alloc(64)
	release := holdCache(c)
	for what, f := range map[string]func(){
		"Alloc": func() { c.Alloc(64) }, "AllocUnzeroed": func() { c.AllocUnzeroed(64) },
		"Free": func() { c.Free(b) }, "Flush": c.Flush, "Close": c.Close,
	} {
		done := make(chan string)
		go func() { done <- sharedPanic(f) }()
		if msg := <-done; !strings.HasPrefix(msg, "offheap: Local."+what+" while another goroutine is using the Local") {
			t.Errorf("%s during another goroutine's call: panic %q", what, msg)
		}
	}
	release()
	noPanic(t, func() { c.Free(b); c.Free(c.Alloc(64)) })

	// Control: the Local used by two goroutines in turn is fine.
	done := make(chan string)
	go func() { done <- sharedPanic(func() { c.Free(c.Alloc(64)) }) }()
	if msg := <-done; msg != "" {
		t.Fatalf("a Local passed between goroutines: %s", msg)
	}
}

// TestLocalMagazinesOff: a Local of a heap with magazines off holds
// stacks of the default depth, and its batches go back to the spans.
func TestLocalMagazinesOff(t *testing.T) {
	skipChecked(t)
	h := newTestHeap(t, unprofiled(Options{MagazineDepth: -1}))
	c := h.NewLocal()
	for range 3 {
		c.Free(c.AllocUnzeroed(64))
	}
	if s := h.Stats(); s.MagazineHits != 0 || s.LocalHits != 2 {
		t.Fatalf("magazines off: %v", s)
	}
	c.Close()
	if s := h.Stats(); s.LocalBytes != 0 || s.DepotBytes != 0 {
		t.Fatalf("after Close: %v", s)
	}
}

// TestLocalSampled: a Local of a sampled heap keeps its own stacks (its
// Allocs count as LocalHits) and puts about one allocation in GuardOneIn on
// guard pages, as the heap's magazines do (TestSampleRate, the same bounds);
// a sampled block it frees is the checker's, which reports its double free
// with stacks that start in the program.
func TestLocalSampled(t *testing.T) {
	skipChecked(t)
	h := newTestHeap(t, Options{GuardOneIn: 100})
	c := h.NewLocal()
	sampled, guarded := 0, []byte(nil)
	var live [][]byte
	for i := range 20000 {
		b := c.Alloc(64)
		if page, _ := h.pages.PageOf(addrOf(b)); uint8(*h.pages.Entry(page)) == pageheap.ClassGuarded { // in any region, as TestSampleRate
			sampled++
			if guarded == nil {
				guarded = b
				continue // kept for the double free below
			}
		}
		live = append(live, b)
		if i%4 != 3 { // a few live per class
			for _, b := range live {
				c.Free(b)
			}
			live = live[:0]
		}
	}
	for _, b := range live {
		c.Free(b)
	}
	if sampled < 120 || sampled > 300 {
		t.Fatalf("GuardOneIn 100: %d of a Local's 20000 Allocs sampled", sampled)
	}
	if s := h.Stats(); s.LocalHits < 15000 || s.MagazineHits != 0 {
		t.Fatalf("a sampled heap's Local served %d of 20000 Allocs from its stacks (%v)", s.LocalHits, s)
	}
	if info, ok := h.Lookup(addrOf(guarded)); !ok || !info.Guarded {
		t.Fatalf("a sampled block of the Local: %+v %v", info, ok)
	}
	c.Free(guarded)
	me := memoryError(t, func() { c.Free(guarded) })
	if me.Kind != DoubleFree {
		t.Fatalf("double free of a Local's sampled block: %v", me)
	}
	for what, st := range map[string]string{"alloc": me.AllocStack, "free": me.FreeStack, "again": me.AgainStack} {
		wantStack(t, what, st, "TestLocalSampled")
		if strings.Contains(st, "offheap.(*Local)") {
			t.Errorf("%s stack shows the Local's frames:\n%s", what, st)
		}
	}
	c.Close()
	if s := h.Stats(); s.Allocs != s.Frees || s.InUseBytes != 0 {
		t.Fatalf("after the Local's Close: %v", s)
	}
	closeClean(t, h)
}
