package offheap

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

// TestLeakErrorGroups: Error prints the groups largest first, at most
// maxGroupsShown of them, and counts the rest.
func TestLeakErrorGroups(t *testing.T) {
	var e LeakError
	groups := maxGroupsShown + 3
	for g := range groups {
		for k := range g + 1 { // group g: g+1 blocks of 16 bytes
			e.Leaks = append(e.Leaks, Leak{Addr: uintptr(0x1000*g + 16*k), Size: 16, Stack: fmt.Sprintf("f%d\n\tfile.go:%d\n", g, g)})
		}
	}
	msg := e.Error()
	gs := e.Groups()
	if len(gs) != groups || len(gs[0].Leaks) != groups || gs[0].Bytes != 16*groups || gs[groups-1].Bytes != 16 {
		t.Fatalf("groups: %d, the first %d blocks and %d bytes, the last %d bytes", len(gs), len(gs[0].Leaks), gs[0].Bytes, gs[groups-1].Bytes)
	}
	for _, want := range []string{
		fmt.Sprintf("offheap: leak: %d blocks (%d bytes) still live at Close, allocated at %d places", len(e.Leaks), 16*len(e.Leaks), groups),
		fmt.Sprintf("\n\n%d blocks, %d bytes, allocated at:\nf%d\n", groups, 16*groups, groups-1),
		"\n\n... and 3 more places: 6 blocks, 96 bytes", // groups 0-2: 1+2+3 blocks
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("the report lacks %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "\nf2\n") {
		t.Errorf("a group past the first %d printed:\n%s", maxGroupsShown, msg)
	}
}

// TestLeaksWhileRunning: Leaks may be called while other goroutines
// allocate and free; what they hold at the end, and only that, is listed.
func TestLeaksWhileRunning(t *testing.T) {
	h := checkedHeap(t, Options{})
	var wg, started sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		started.Add(1)
		wg.Go(func() {
			var held [][]byte
			for i := 0; ; i++ {
				if i == 100 {
					started.Done()
				}
				select {
				case <-stop:
					for _, b := range held {
						h.Free(b)
					}
					return
				default:
				}
				held = append(held, h.Alloc(1+i%3000))
				if len(held) > 50 {
					h.Free(held[0])
					held = held[1:]
				}
			}
		})
	}
	started.Wait()
	for range 50 {
		if le := h.Leaks(); le != nil {
			_ = le.Error()
		}
	}
	close(stop)
	wg.Wait()
	if le := h.Leaks(); le != nil {
		t.Fatalf("all freed, yet: %v", le)
	}
	b := h.Alloc(77)
	le := h.Leaks()
	if le == nil || len(le.Leaks) != 1 || le.Leaks[0].Size != 77 || !strings.Contains(le.Error(), "1 block (77 bytes) live") {
		t.Fatalf("one block live: %v", le)
	}
	h.Free(b)
}

// TestMemoryErrorsKept: a memory error whose panic was recovered is kept,
// and a write after free that Close found is added to them.
func TestMemoryErrorsKept(t *testing.T) {
	h, err := NewHeap(Options{Checked: true})
	if err != nil {
		t.Fatal(err)
	}
	if es := h.MemoryErrors(); len(es) != 0 {
		t.Fatalf("a new heap: %v", es)
	}
	b := h.Alloc(40)
	h.Free(b)
	func() {
		defer func() { _ = recover() }()
		h.Free(b)
	}()
	c := h.Alloc(40)
	h.Free(c)
	c[0] = 1 // found by Close, in the quarantine
	h.Close()
	es := h.MemoryErrors()
	if len(es) != 2 || es[0].Kind != DoubleFree || es[1].Kind != WriteAfterFree {
		t.Fatalf("want a double free and a write after free, got %v", es)
	}
}
