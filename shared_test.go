package offheap

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/offheap/offheap/internal/osmem"
)

// sharedHeap is a fast heap closed at the end of the test.
func sharedHeap(t testing.TB) *Heap {
	t.Helper()
	h, err := NewHeap(Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// sharedCheckedHeap is a checked heap, or skips the test where checked mode
// is not available yet.
func sharedCheckedHeap(t testing.TB) *Heap {
	t.Helper()
	h, err := NewHeap(Options{Checked: true})
	if err != nil {
		t.Skipf("checked mode unavailable: %v", err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// sharedLive is the number of live blocks of h.
func sharedLive(h *Heap) uint64 {
	s := h.Stats()
	return s.Allocs - s.Frees
}

// sharedPanic runs f and returns what it panicked with, as a string, or "".
func sharedPanic(f func()) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			msg = fmt.Sprint(r)
			if msg == "" {
				msg = "(empty panic)"
			}
		}
	}()
	f()
	return ""
}

func TestSharedBasics(t *testing.T) {
	h := sharedHeap(t)
	base := sharedLive(h)
	for _, hot := range []bool{false, true} {
		for _, n := range []int{0, 1, 15, 16, 100, 4096, maxSmall + 1} {
			var opts []SharedOption
			if hot {
				opts = append(opts, Hot())
			}
			var calls int
			var seen []byte
			opts = append(opts, OnLastRelease(func(b []byte) {
				calls++
				seen = append([]byte(nil), b...) // b is freed after the callback
				// Heap locks are free here: these would deadlock otherwise.
				h.Free(h.Alloc(64))
				h.Stats()
				x := h.NewShared(8)
				x.Release()
			}))
			s := h.NewShared(n, opts...)
			if s == (Shared{}) {
				t.Fatal("NewShared returned the zero Shared")
			}
			b := s.Bytes()
			if len(b) != n || cap(b) != n {
				t.Fatalf("hot=%v n=%d: len %d cap %d", hot, n, len(b), cap(b))
			}
			for i, c := range b {
				if c != 0 {
					t.Fatalf("hot=%v n=%d: byte %d = %d, not zeroed", hot, n, i, c)
				}
			}
			for i := range b {
				b[i] = byte(i)
			}
			if got := s.Refs(); got != 1 {
				t.Fatalf("hot=%v: Refs = %d, want 1", hot, got)
			}
			var refs []Shared
			for i := range 10 {
				r := s.Retain()
				if n > 0 && &r.Bytes()[0] != &b[0] {
					t.Fatal("Retain changed the bytes")
				}
				refs = append(refs, r)
				if got := s.Refs(); got != i+2 {
					t.Fatalf("hot=%v: Refs = %d after %d Retains, want %d", hot, got, i+1, i+2)
				}
			}
			s.Release() // the creator first: seals a Hot handle
			if got := refs[0].Refs(); got != 10 {
				t.Fatalf("hot=%v: Refs = %d after the creator's Release, want 10", hot, got)
			}
			ReleaseShared(refs[1:])
			if calls != 0 {
				t.Fatalf("hot=%v: OnLastRelease ran with a reference left", hot)
			}
			for _, r := range refs[1:] {
				if r != (Shared{}) {
					t.Fatal("ReleaseShared did not zero the element")
				}
			}
			refs[0].Release()
			if calls != 1 || len(seen) != n {
				t.Fatalf("hot=%v n=%d: OnLastRelease ran %d times with %d bytes", hot, n, calls, len(seen))
			}
			for i := range seen {
				if seen[i] != byte(i) {
					t.Fatalf("OnLastRelease saw byte %d = %d", i, seen[i])
				}
			}
		}
	}
	if got := sharedLive(h); got != base {
		t.Fatalf("%d blocks live, want %d", got, base)
	}
}

func TestSharedZero(t *testing.T) {
	var z Shared
	if z != (Shared{}) || z.Bytes() != nil || z.Refs() != 0 || z.Retain() != (Shared{}) {
		t.Fatal("the zero Shared is not empty")
	}
	z.Release()
	ReleaseShared([]Shared{{}, {}})
	if StaticShared(nil) == (Shared{}) || len(StaticShared(nil).Bytes()) != 0 {
		t.Fatal("StaticShared(nil) is the zero Shared")
	}
	if n := int(unsafe.Sizeof(z)); n > 24 {
		t.Fatalf("Shared is %d bytes", n)
	}
}

// TestSharedStaticReadOnly retains and releases a Static handle over a page
// that faults on any write: a write would kill the test.
func TestSharedStaticReadOnly(t *testing.T) {
	n := osmem.PageSize
	p, err := osmem.Map(n)
	if err != nil {
		t.Skip(err)
	}
	defer osmem.Unmap(p, n)
	page := unsafe.Slice((*byte)(p), n)
	for i := range page {
		page[i] = byte(i * 7)
	}
	if err := osmem.ReadOnly(p, n); err != nil {
		t.Fatal(err)
	}
	s := StaticShared(page[:100])
	held := make([]Shared, 0, 64)
	for i := range 200_000 {
		held = append(held, s.Retain())
		if len(held) == cap(held) || i%3 == 0 {
			ReleaseShared(held)
			held = held[:0]
		}
	}
	ReleaseShared(held)
	for range 1000 {
		s.Release() // immortal: any number of Releases is fine
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 50_000 {
				s.Retain().Release()
			}
		})
	}
	wg.Wait()
	if s.Refs() != math.MaxInt {
		t.Fatalf("Static Refs = %d", s.Refs())
	}
	b := s.Bytes()
	if len(b) != 100 || &b[0] != &page[0] || b[99] != page[99] {
		t.Fatal("Static Bytes is not b")
	}
}

func TestSharedReleasePastZero(t *testing.T) {
	for _, mode := range []string{"fast", "checked"} {
		t.Run(mode, func(t *testing.T) {
			h := sharedHeapFor(t, mode)
			check := func(what, msg, prefix string) {
				t.Helper()
				if !strings.HasPrefix(msg, prefix) {
					t.Fatalf("%s: panic %q, want prefix %q", what, msg, prefix)
				}
				if mode == "checked" && strings.HasPrefix(what, "hot") && !strings.Contains(msg, "TestSharedReleasePastZero") {
					t.Fatalf("%s: the allocation stack does not name the allocating test: %q", what, msg)
				}
				if mode == "checked" && !strings.Contains(msg, "allocated at:\n") {
					t.Fatalf("%s: checked-mode panic does not say where the handle was allocated: %q", what, msg)
				}
			}
			const past = "offheap: Shared.Release past zero"
			for _, hot := range []bool{false, true} {
				var opts []SharedOption
				if hot {
					opts = append(opts, Hot())
				}
				name := fmt.Sprintf("hot=%v", hot)

				// A copy released once too often right after the last Release.
				s := h.NewShared(32, opts...)
				c := s
				s.Release()
				check(name+" copy", sharedPanic(c.Release), past)

				// The same through a retained reference.
				s = h.NewShared(32, opts...)
				r := s.Retain()
				s.Release()
				r2 := r
				r.Release()
				check(name+" retained copy", sharedPanic(r2.Release), past)

				// Retain after the last Release.
				s = h.NewShared(32, opts...)
				c = s
				s.Release()
				check(name+" retain", sharedPanic(func() { c.Retain() }), "offheap: Shared.Retain of a released handle")
			}

			// Hot: surplus releases made in per-P mode are caught when the
			// creator seals, in fast mode; checked mode catches the surplus
			// Release itself (TestSharedHotOverRelease).
			s := h.NewShared(32, Hot())
			r := s.Retain()
			r.Release()
			if h.checked() { // checked mode, or every heap under offheapchecked
				if me := memoryError(t, r.Release); me.Kind != OverRelease {
					t.Fatalf("hot surplus: %v", me)
				}
				s.Release()
				return
			}
			r.Release()
			check("hot surplus", sharedPanic(s.Release), past)
		})
	}
}

// TestSharedStaleKeepsKey: in a fast heap a freed handle's count word holds
// the heap's double-free key (doublefree.go). A Release or Retain of a stale
// copy panics, and leaves the key as it was, so the block stays marked free.
func TestSharedStaleKeepsKey(t *testing.T) {
	if buildChecked {
		t.Skip("checked heaps keep no key")
	}
	h := sharedHeap(t)
	s := h.NewShared(32)
	stale, block := s, s.block()
	s.Release()
	if *keyWord(block) != h.key {
		t.Fatal("the freed handle's count word does not hold the key")
	}
	for _, op := range []struct {
		name, want string
		f          func()
	}{
		{"Release", "offheap: Shared.Release past zero", stale.Release},
		{"Retain", "offheap: Shared.Retain of a released handle", func() { stale.Retain() }},
	} {
		for range 2 {
			if msg := sharedPanic(op.f); !strings.HasPrefix(msg, op.want) {
				t.Fatalf("%s of a stale copy: %q", op.name, msg)
			}
			if *keyWord(block) != h.key {
				t.Fatalf("after a stale %s the count word is %#x, not the key", op.name, *keyWord(block))
			}
		}
	}
	wantDoubleFree(t, h, "Free of the freed handle's block", block, sharedHdr+32, func() { h.Free(bytesAt(block, sharedHdr+32)) })
}

// TestSharedReleaseAllRounds grows a slice of 4 handles and shrinks it with
// ReleaseShared 1000 times: nothing may stay live.
func TestSharedReleaseAllRounds(t *testing.T) {
	for _, mode := range []string{"fast", "checked"} {
		t.Run(mode, func(t *testing.T) {
			h := sharedHeapFor(t, mode)
			base := sharedLive(h)
			var released int
			var s []Shared
			for round := range 1000 {
				for i := range 4 {
					var opts []SharedOption
					switch (round + i) % 4 {
					case 1:
						opts = append(opts, Hot())
					case 2:
						opts = append(opts, OnLastRelease(func([]byte) { released++ }))
					}
					s = append(s, h.NewShared(8*(i+1), opts...))
				}
				ReleaseShared(s)
				s = s[:0]
			}
			if got := sharedLive(h); got != base {
				t.Fatalf("%d blocks live after 1000 rounds, want %d", got-base, 0)
			}
			if released != 1000 {
				t.Fatalf("%d OnLastRelease calls, want 1000", released)
			}
			if mode == "checked" {
				if err := h.Close(); err != nil {
					t.Fatalf("checked Close: %v", err)
				}
			}
		})
	}
}

// TestSharedLeakReport: a leaked Shared is reported with the length
// NewShared was asked for and the address of its bytes, and its stack
// starts at the program's call, not in NewShared, plain or Hot.
func TestSharedLeakReport(t *testing.T) {
	for _, hot := range []bool{false, true} {
		h := checkedHeap(t, Options{})
		var opts []SharedOption
		if hot {
			opts = append(opts, Hot())
		}
		s := h.NewShared(64, opts...)
		var le *LeakError
		if err := h.Close(); !errors.As(err, &le) || len(le.Leaks) != 1 {
			t.Fatalf("hot=%v: Close: %v", hot, err)
		}
		l := le.Leaks[0]
		if l.Size != 64 || l.Addr != uintptr(s.data) {
			t.Fatalf("hot=%v: leak of %d bytes at %#x; the Shared has 64 bytes at %#x", hot, l.Size, l.Addr, uintptr(s.data))
		}
		if first, _, _ := strings.Cut(l.Stack, "\n"); !strings.Contains(first, "TestSharedLeakReport") {
			t.Fatalf("hot=%v: the leak's stack starts at %q:\n%s", hot, first, l.Stack)
		}
	}
}

// TestSharedStaleKeepsPageClean: after the last Release and a Trim, the
// freed block's pages are given back and counted clean; a stale Retain or
// Release (which panics) must not write to them, or a later zeroed Alloc
// that takes the pages without clearing them returns nonzero bytes.
func TestSharedStaleKeepsPageClean(t *testing.T) {
	if buildChecked {
		t.Skip("checked heaps check the registry before touching a handle")
	}
	stale := []struct {
		name string
		f    func(owner, retained Shared)
	}{
		{"Retain", func(s, _ Shared) { s.Retain() }},
		{"Release", func(s, _ Shared) { s.Release() }},
		{"retained Retain", func(_, r Shared) { r.Retain() }},
		{"retained Release", func(_, r Shared) { r.Release() }},
	}
	zeros := make([]byte, 393216)
	for _, n := range []int{32, 64 << 10, 300 << 10} {
		for _, hot := range []bool{false, true} {
			for _, op := range stale {
				h := sharedHeap(t)
				var opts []SharedOption
				if hot {
					opts = append(opts, Hot())
				}
				s := h.NewShared(n, opts...)
				r := s.Retain()
				s.Release()
				r.Release()
				h.Trim()
				if msg := sharedPanic(func() { op.f(s, r) }); !strings.HasPrefix(msg, "offheap: Shared.") {
					t.Fatalf("n=%d hot=%v: a stale %s: panic %q", n, hot, op.name, msg)
				}
				// Every zeroed block the heap hands out now reads as zeros,
				// the ones over the stale handle's pages included.
				for _, size := range []int{393216, n + sharedHdr + 4096, 8192, 64} {
					for range 64 {
						b := h.Alloc(size)
						if bytes.Equal(b, zeros[:size]) {
							continue
						}
						i := slices.IndexFunc(b, func(c byte) bool { return c != 0 })
						t.Fatalf("n=%d hot=%v: byte %d of a zeroed Alloc(%d) is %#x after a stale %s", n, hot, i, size, b[i], op.name)
					}
				}
				h.Close()
			}
		}
	}
}
