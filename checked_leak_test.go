package offheap

// Checked mode's leak reports: what Close and Leaks list, after reuse and
// for runs of their own, each beside its negative control.

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckedLeak(t *testing.T) {
	h := checkedHeap(t, Options{})
	keep := h.Alloc(100)
	h.Free(h.Alloc(200))
	big := h.Alloc(100_000)
	err := h.Close()
	var le *LeakError
	if !errors.As(err, &le) || len(le.Leaks) != 2 {
		t.Fatalf("Close: %v, want 2 leaks", err)
	}
	want := map[uintptr]int{addrOf(keep): 100, addrOf(big): 100_000}
	for _, l := range le.Leaks {
		if want[l.Addr] != l.Size {
			t.Errorf("leak %+v, want %v", l, want)
		}
		wantStack(t, "leak", l.Stack, "TestCheckedLeak")
	}
	if !strings.HasPrefix(err.Error(), "offheap: leak: 2 blocks (100100 bytes) still live at Close") {
		t.Errorf("message: %s", err)
	}
	// Control: everything freed.
	h = checkedHeap(t, Options{})
	h.Free(h.Alloc(100))
	closeClean(t, h)
}

// TestCheckedLeakAfterReuse: after spans of one class go back to the heap
// and their pages serve spans of another class, Close lists each live block
// once. Ten spans of 32-byte blocks make way for two spans of 1 KiB
// blocks, so eight old span structs are not reused, and one of them still
// describes pages that now hold new blocks. Positive control: with
// closeSmall taking every span struct as current, those structs named the
// new blocks a second time and this test failed.
func TestCheckedLeakAfterReuse(t *testing.T) {
	h := checkedHeap(t, Options{})
	onOneP(t)
	var old [][]byte
	for range 20000 {
		old = append(old, h.Alloc(20)) // 32-byte blocks
	}
	for _, b := range old {
		h.Free(b)
	}
	h.Trim() // the quarantine empties, the spans go back
	live := map[uintptr]bool{}
	for range 120 {
		live[addrOf(h.Alloc(1000))] = true // 1 KiB blocks, on the same pages
	}
	err := h.Close()
	var le *LeakError
	if !errors.As(err, &le) {
		t.Fatalf("Close: %v, want leaks", err)
	}
	seen := map[uintptr]bool{}
	for _, l := range le.Leaks {
		if !live[l.Addr] || seen[l.Addr] || l.Size != 1000 {
			t.Fatalf("leak %#x (%d bytes): live %v, listed before %v", l.Addr, l.Size, live[l.Addr], seen[l.Addr])
		}
		seen[l.Addr] = true
	}
	if len(seen) != len(live) {
		t.Fatalf("%d leaks listed, %d blocks live", len(seen), len(live))
	}
}

// TestCheckedLeakRuns: Close finds the leaks of page runs too, large blocks
// and guarded ones, by walking the pagemap, in regions after the first as in
// region 0; a run freed, and one an arena holds, is none.
func TestCheckedLeakRuns(t *testing.T) {
	for _, opts := range []Options{{}, {GuardPages: true}} {
		opts.Checked = true
		h := newTestHeapFirstRegion(t, opts, 4<<20)
		var want []int
		for _, n := range []int{400_000, 3 << 20, 300_000} { // the second fills region 0: a later region
			h.Alloc(n)
			want = append(want, n)
		}
		h.Free(h.Alloc(500_000))
		a := h.NewArena()
		a.Alloc(100)
		if h.regionCount() < 2 {
			t.Fatalf("%+v: %d region: the test needs a later one", opts, h.regionCount())
		}
		err := h.Close()
		var le *LeakError
		if !errors.As(err, &le) || len(le.Leaks) != len(want) {
			t.Fatalf("%+v: Close: %v, want %d leaks", opts, err, len(want))
		}
		got := map[int]bool{}
		for _, l := range le.Leaks {
			got[l.Size] = true
			wantStack(t, "leak", l.Stack, "TestCheckedLeakRuns")
		}
		for _, n := range want {
			if !got[n] {
				t.Errorf("%+v: no leak of %d bytes in %v", opts, n, le.Leaks)
			}
		}
	}
}
