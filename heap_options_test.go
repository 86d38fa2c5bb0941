package offheap

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/offheap/offheap/internal/pageheap"
)

func TestNewHeapOptions(t *testing.T) {
	if _, err := NewHeap(Options{MagazineDepth: MaxMagazineDepth + 1}); err == nil {
		t.Error("MagazineDepth above the maximum accepted")
	}
	if _, err := NewHeap(Options{Limit: -1}); err == nil {
		t.Error("negative Limit accepted")
	}
	if h, err := NewHeap(Options{GuardPages: true}); err != nil || h.chk == nil || !h.opts.Checked {
		t.Errorf("GuardPages alone: %v, want a checked heap", err)
	} else {
		h.Close()
	}
	h := newTestHeap(t, Options{MagazineDepth: MaxMagazineDepth})
	h.Free(h.Alloc(64))
}

func TestDefault(t *testing.T) {
	resetDefault()
	t.Cleanup(resetDefault) // for ExampleSetDefaultOptions, which must come first
	h := Default()
	if h != Default() {
		t.Fatal("Default returned two heaps")
	}
	b := h.Alloc(100)
	h.Free(b)
}

// TestSetDefaultOptions: Default is created with the options set before its
// first use; setting others afterwards is an error that says so, and bad
// options are refused before they can make Default panic.
func TestSetDefaultOptions(t *testing.T) {
	resetDefault()
	t.Cleanup(resetDefault)
	if err := SetDefaultOptions(Options{Limit: -1}); err == nil || !strings.HasPrefix(err.Error(), "offheap: negative Limit") {
		t.Fatalf("SetDefaultOptions with a negative Limit: %v", err)
	}
	opts := Options{Limit: 32 << 20, MagazineDepth: 16}
	if err := SetDefaultOptions(opts); err != nil {
		t.Fatal(err)
	}
	h := Default()
	if _, err := h.TryAlloc(64 << 20); !errors.Is(err, ErrLimit) {
		t.Fatalf("Default ignores the Limit it was set: TryAlloc(64 MiB) = %v", err)
	}
	if h.opts.MagazineDepth != 16 {
		t.Fatalf("Default ignores the MagazineDepth it was set: %+v", h.opts)
	}
	if err := SetDefaultOptions(opts); err != nil {
		t.Fatalf("setting the options Default has again: %v", err)
	}
	err := SetDefaultOptions(Options{})
	if err == nil || !strings.Contains(err.Error(), "before the first use of Default") {
		t.Fatalf("SetDefaultOptions after Default: %v", err)
	}
	if Default() != h {
		t.Fatal("a refused SetDefaultOptions changed the default heap")
	}
}

// TestStatsString: the one-line summary names every count and byte figure,
// bytes in the largest unit they fill.
func TestStatsString(t *testing.T) {
	s := Stats{Allocs: 1000, Frees: 990, MagazineHits: 970, LocalHits: 10, CentralHits: 12, Fresh: 5, Large: 3,
		InUseBytes: 512, MappedBytes: 3 << 20, ReleasedBytes: 1536, MagazineBytes: 0, DepotBytes: 5 << 30, LocalBytes: 2048}
	want := "1000 allocs (970 magazine, 10 local, 12 central, 5 fresh, 3 large), 990 frees; 512 B in use, 3.0 MiB mapped, 1.5 KiB released, 0 B in magazines, 5.0 GiB in depots, 2.0 KiB in Locals"
	if got := s.String(); got != want {
		t.Errorf("String() =\n%s\nwant\n%s", got, want)
	}
	if got := fmt.Sprint(s); got != want {
		t.Errorf("fmt.Sprint uses %q, not String", got)
	}
	for n, want := range map[uint64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 1<<60 + 1<<59: "1.5 EiB"} {
		if got := pageheap.SizeString(n); got != want {
			t.Errorf("sizeString(%d) = %q, want %q", n, got, want)
		}
	}
}
