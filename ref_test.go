package offheap

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"testing"
	"unsafe"
)

// refArms are the heaps Ref is tested on: a fast heap, one without
// magazines, a checked heap, a guarded one and a sampled one (whose guarded
// blocks the checker knows and the rest the pagemap).
var refArms = []struct {
	name string
	opts Options
}{
	{"fast", Options{}},
	{"nomag", Options{MagazineDepth: -1}},
	{"checked", Options{Checked: true}},
	{"guarded", Options{Checked: true, GuardPages: true}},
	{"sampled", Options{GuardOneIn: 3}},
}

// TestRefRoundTrip: for blocks of every class and some large ones, Ref of
// the block and of prefixes comes back through Bytes as the same slice;
// Refs are equal exactly when block and length are; a Ref survives a trip
// through a map and through off-heap memory; and the Refs of one block's
// prefixes differ only in Len.
func TestRefRoundTrip(t *testing.T) {
	for _, arm := range refArms {
		t.Run(arm.name, func(t *testing.T) {
			h := newTestHeap(t, arm.opts)
			sizes := testSizes()
			if arm.opts.GuardPages { // pages of their own each: every fourth size
				var few []int
				for i := 0; i < len(sizes); i += 4 {
					few = append(few, sizes[i])
				}
				sizes = few
			}
			table := MakeSlice[Ref](h, len(sizes)) // Refs kept off-heap
			m := make(map[Ref]int)
			var blocks [][]byte
			for i, n := range sizes {
				b := h.Alloc(n)
				fill(b)
				blocks = append(blocks, b)
				r := h.Ref(b)
				if r.IsZero() || r.Len() != n {
					t.Fatalf("Ref of %d bytes: IsZero %v, Len %d", n, r.IsZero(), r.Len())
				}
				if got := h.Bytes(r); addrOf(got) != addrOf(b) || len(got) != n || cap(got) != n {
					t.Fatalf("Bytes(Ref(%d bytes at %#x)) = %d bytes (cap %d) at %#x", n, addrOf(b), len(got), cap(got), addrOf(got))
				}
				if h.Ref(b) != r {
					t.Fatalf("two Refs of one slice differ")
				}
				if half := b[:n/2+1]; n > 1 {
					hr := h.Ref(half)
					if hr == r || hr.Len() != len(half) || addrOf(h.Bytes(hr)) != addrOf(b) {
						t.Fatalf("Ref of a %d-byte prefix of %d: %v vs %v", len(half), n, hr, r)
					}
				}
				table[i] = r
				if _, dup := m[r]; dup {
					t.Fatalf("two blocks with one Ref")
				}
				m[r] = i
			}
			for i, r := range table {
				b := h.Bytes(r)
				if m[r] != i || addrOf(b) != addrOf(blocks[i]) {
					t.Fatalf("Ref %d resolves to another block", i)
				}
				if err := checkFill(b); err != nil {
					t.Fatal(err)
				}
			}
			for _, b := range blocks {
				h.Free(b)
			}
			FreeSlice(h, table)
		})
	}
}

// TestRefEmpty: the Ref of an empty slice is not the zero Ref, has length
// 0, and resolves to an empty slice; Free ignores that slice.
func TestRefEmpty(t *testing.T) {
	for _, arm := range refArms[:3] {
		h := newTestHeap(t, arm.opts)
		b := h.Alloc(40)
		for _, e := range [][]byte{nil, {}, h.Alloc(0), b[:0]} {
			r := h.Ref(e)
			if r.IsZero() || r.Len() != 0 {
				t.Fatalf("%s: Ref of an empty slice: IsZero %v, Len %d", arm.name, r.IsZero(), r.Len())
			}
			got := h.Bytes(r)
			if got == nil || len(got) != 0 {
				t.Fatalf("%s: Bytes of an empty Ref = %v", arm.name, got)
			}
			h.Free(got)
		}
		h.Free(b)
		if s := h.Stats(); s.LiveBlocks != 0 {
			t.Fatalf("%s: %d live blocks", arm.name, s.LiveBlocks)
		}
	}
	if (Ref{}).Len() != 0 || !(Ref{}).IsZero() {
		t.Fatal("the zero Ref is not zero")
	}
}

// TestRefRefuses: Ref panics, as Free does, for what is not a block of the
// heap or a prefix of one, in every mode, and leaves the heap usable.
func TestRefRefuses(t *testing.T) {
	for _, arm := range refArms {
		t.Run(arm.name, func(t *testing.T) {
			h := newTestHeap(t, arm.opts)
			other := newTestHeap(t, Options{})
			b := h.Alloc(100)
			large := h.Alloc(3 * pageSize)
			ob := other.Alloc(100)
			goMem := make([]byte, 100)
			cases := []struct {
				name string
				b    []byte
				want string
			}{
				{"Go memory", goMem, "did not allocate"},
				{"another heap's block", ob, "did not allocate"},
				{"b[1:]", b[1:], "not the start of a block"},
				{"inside a large block", large[pageSize:], "not the start of a block"},
				{"past the end", unsafe.Slice(unsafe.SliceData(b), 100_000), "Ref of 100000 bytes"},
			}
			if arm.opts.Checked {
				// The pagemap says 112 bytes; the record says 100.
				cases = append(cases, struct {
					name string
					b    []byte
					want string
				}{"past its length", unsafe.Slice(unsafe.SliceData(b), 101), "longer than the block's 100 bytes"})
			}
			for _, c := range cases {
				msg := mustPanic(t, func() { h.Ref(c.b) })
				if !strings.Contains(msg, c.want) || !strings.Contains(msg, "Ref") {
					t.Errorf("Ref of %s: panic %q, want it to contain %q", c.name, msg, c.want)
				}
			}
			// The heap is intact: the blocks resolve and free.
			if got := h.Bytes(h.Ref(b)); addrOf(got) != addrOf(b) {
				t.Fatal("Bytes after a refused Ref")
			}
			h.Free(b)
			h.Free(large)
			other.Free(ob)
		})
	}
}

// TestRefFreedFast: in a fast heap Ref refuses a freed block whose pages
// went back to the page heap (a large block; a small one whose span
// emptied, after Trim). A freed block in a span still in use passes: the
// documented limit.
func TestRefFreedFast(t *testing.T) {
	if buildChecked {
		t.Skip("fast mode's limits: every heap is checked under the offheapchecked tag")
	}
	h := newTestHeap(t, Options{ProfileBytes: -1}) // a freed sample is a free page, which the pagemap can tell
	large := h.Alloc(maxSmall + 1)
	h.Free(large)
	if msg := mustPanic(t, func() { h.Ref(large) }); !strings.Contains(msg, "not allocated") {
		t.Errorf("Ref of a freed large block: %q", msg)
	}
	small := h.Alloc(5000)
	h.Free(small)
	h.Trim() // the magazine gives it back, the span empties, its pages are free
	if msg := mustPanic(t, func() { h.Ref(small) }); !strings.Contains(msg, "not allocated") {
		t.Errorf("Ref of a freed small block in a freed span: %q", msg)
	}
	keep, gone := h.Alloc(64), h.Alloc(64)
	h.Free(gone)
	h.Ref(gone) // the span holds keep: the pagemap cannot tell
	h.Free(keep)
}

// TestBytesRefuses: Bytes panics, naming the problem, for the zero Ref, a
// Ref of another heap, a Ref no heap made, and on a closed heap.
func TestBytesRefuses(t *testing.T) {
	for _, arm := range refArms[:3] {
		t.Run(arm.name, func(t *testing.T) {
			h := newTestHeap(t, arm.opts)
			other := newTestHeap(t, arm.opts)
			ob := other.Alloc(64)
			r := other.Ref(ob)
			if msg := mustPanic(t, func() { h.Bytes(Ref{}) }); !strings.Contains(msg, "zero Ref") {
				t.Errorf("Bytes of the zero Ref: %q", msg)
			}
			if msg := mustPanic(t, func() { h.Bytes(r) }); !strings.Contains(msg, "another heap") {
				t.Errorf("Bytes of another heap's Ref: %q", msg)
			}
			forged := Ref{h.ref.off | uint64(h.size), h.ref.n | 8}
			if msg := mustPanic(t, func() { h.Bytes(forged) }); !strings.Contains(msg, "past the end of this heap's address space") {
				t.Errorf("Bytes of a Ref past the heap: %q", msg)
			}
			high := Ref{h.ref.off, h.ref.n | 1<<47 | 8} // in range of the encoding, past the heap
			if msg := mustPanic(t, func() { h.Bytes(high) }); !strings.Contains(msg, "past the end") {
				t.Errorf("Bytes of a Ref longer than the heap: %q", msg)
			}
			// Tags that differ in the top bit of both halves: the fields
			// XORed with this heap's tag add up, wrapping, to a range inside
			// the heap. Only the tag test stands between it and the fast
			// path.
			wrap := Ref{h.ref.off ^ 1<<63 | 64, h.ref.n ^ 1<<63 | 8}
			if msg := mustPanic(t, func() { h.Bytes(wrap) }); !strings.Contains(msg, "another heap") {
				t.Errorf("Bytes of a Ref whose tag differs in both top bits: %q", msg)
			}
			if got := other.Bytes(r); addrOf(got) != addrOf(ob) {
				t.Fatal("the other heap lost its Ref")
			}
			other.Free(ob)

			b := h.Alloc(64)
			rb := h.Ref(b)
			re := h.Ref(nil)
			h.Free(b)
			if err := h.Close(); err != nil {
				t.Fatal(err)
			}
			for _, r := range []Ref{rb, re} {
				if msg := mustPanic(t, func() { h.Bytes(r) }); !strings.Contains(msg, ErrClosed.Error()) {
					t.Errorf("Bytes on a closed heap: %q", msg)
				}
			}
			if msg := mustPanic(t, func() { h.Ref(nil) }); !strings.Contains(msg, ErrClosed.Error()) {
				t.Errorf("Ref on a closed heap: %q", msg)
			}
		})
	}
}

// TestRefTags: tags are never 0 (so the zero Ref matches no heap), also
// where the counter wraps, and every heap gets its own.
func TestRefTags(t *testing.T) {
	seen := map[uint32]bool{}
	for range 100 {
		k := newRefKey()
		if k.tag() == 0 || seen[k.tag()] {
			t.Fatalf("tag %#x: zero or repeated", k.tag())
		}
		seen[k.tag()] = true
	}
	defer refTags.Store(refTags.Load()) // the tags after the wrap were never given to a heap
	refTags.Store(math.MaxUint32 - 1)
	for range 3 {
		if k := newRefKey(); k.tag() == 0 || k.off>>refShift == 0 && k.n>>refShift == 0 {
			t.Fatalf("tag 0 handed out at the wrap")
		}
	}
}

// TestRefUseAfterFreeChecked: a checked heap catches a use after free at the
// handle: Bytes of a Ref to a freed block, and Ref of a freed block, panic
// with a *MemoryError of kind UseAfterFree naming where the block was
// allocated and freed, for small, large and guarded blocks. The bytes are
// not read: the poison is intact when the block leaves quarantine.
func TestRefUseAfterFreeChecked(t *testing.T) {
	for _, arm := range refArms[2:4] {
		for _, n := range []int{100, 100_000} {
			t.Run(fmt.Sprintf("%s/%d", arm.name, n), func(t *testing.T) {
				h := newTestHeap(t, arm.opts)
				b := refAllocSite(h, n)
				r := h.Ref(b)
				refFreeSite(h, b)
				for _, f := range []func(){func() { h.Bytes(r) }, func() { h.Ref(b) }} {
					me := memoryError(t, f)
					if me.Kind != UseAfterFree || me.Addr != addrOf(b) || me.Size != n {
						t.Fatalf("got %v of %#x (%d bytes), want a use after free of %#x (%d bytes)", me.Kind, me.Addr, me.Size, addrOf(b), n)
					}
					if !strings.Contains(me.AllocStack, "refAllocSite") || !strings.Contains(me.FreeStack, "refFreeSite") {
						t.Fatalf("stacks do not name the sites:\n%s", me.Error())
					}
					if !strings.Contains(me.Error(), "offheap: use after free of") {
						t.Fatalf("message: %s", me.Error())
					}
				}
				if err := h.Close(); err != nil {
					t.Fatalf("Close: %v (a use after free that read or wrote the block?)", err)
				}
			})
		}
	}
}

//go:noinline
func refAllocSite(h *Heap, n int) []byte { return h.Alloc(n) }

//go:noinline
func refFreeSite(h *Heap, b []byte) { h.Free(b) }

// TestRefArenaShared: Ref refuses Arena allocations that do not begin a
// chunk and Shared's bytes, with a message that says what a Ref is of.
func TestRefArenaShared(t *testing.T) {
	h := newTestHeap(t, Options{})
	a := h.NewArena()
	// Only an allocation that begins a chunk passes, and each lane (at
	// most one per P) begins one chunk here: the rest are refused.
	refused := 0
	for range runtime.GOMAXPROCS(0) + 2 {
		ab := a.Alloc(32)
		func() {
			defer func() {
				if r := recover(); r != nil {
					refused++
					if msg := fmt.Sprint(r); !strings.Contains(msg, "Arena memory") || !strings.HasPrefix(msg, "offheap: ") {
						t.Errorf("Ref of Arena memory: %q", msg)
					}
				}
			}()
			h.Ref(ab)
		}()
	}
	if refused < 2 {
		t.Errorf("Ref refused %d of %d Arena allocations", refused, runtime.GOMAXPROCS(0)+2)
	}
	a.Release()
	s := h.NewShared(50)
	if msg := mustPanic(t, func() { h.Ref(s.Bytes()) }); !strings.Contains(msg, "Shared's bytes") || !strings.Contains(msg, "16 bytes into") {
		t.Errorf("Ref of Shared's bytes: %q", msg)
	}
	s.Release()
	if st := h.Stats(); st.LiveBlocks != 0 {
		t.Fatalf("%d live blocks", st.LiveBlocks)
	}
}

// TestRefConcurrent: goroutines allocate pattern-filled blocks and hand
// their Refs (not the slices) to other goroutines through channels, which
// resolve them with Bytes, check the pattern and free them; all of it on
// every kind of heap. A Ref that resolved to another block, or a block handed
// out twice, fails the pattern.
func TestRefConcurrent(t *testing.T) {
	for _, arm := range refArms {
		t.Run(arm.name, func(t *testing.T) {
			h := newTestHeap(t, arm.opts)
			workers := runtime.GOMAXPROCS(0) * 2
			ops := 3000
			if testing.Short() || raceEnabled || arm.opts.GuardPages {
				ops = 500
			}
			refs := make(chan Ref, 64)
			errs := make(chan error, workers)
			var makers, users sync.WaitGroup
			for w := range workers {
				makers.Add(1)
				go func() {
					defer makers.Done()
					rng := rand.New(rand.NewPCG(uint64(w), 1))
					for range ops {
						b := h.Alloc(stressSize(rng))
						fill(b)
						refs <- h.Ref(b)
					}
				}()
				users.Add(1)
				go func() {
					defer users.Done()
					for r := range refs {
						b := h.Bytes(r)
						if err := checkFill(b); err != nil {
							select {
							case errs <- err:
							default:
							}
						}
						h.Free(b)
					}
				}()
			}
			makers.Wait()
			close(refs)
			users.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			if s := h.Stats(); s.LiveBlocks != 0 {
				t.Fatalf("%d live blocks after freeing all", s.LiveBlocks)
			}
			if err := h.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestRefArenaSaysArena: Ref of Arena memory says that it belongs to an
// Arena, as Free does, in a fast heap and a checked one. Before the fix a
// fast heap's Ref said "not allocated (already freed, or never handed
// out)", and a checked heap's "not a live block of this heap".
func TestRefArenaSaysArena(t *testing.T) {
	for _, checked := range []bool{false, true} {
		h := newTestHeap(t, Options{Checked: checked})
		a := h.NewArena()
		for _, b := range [][]byte{a.Alloc(32), a.Alloc(100_000)} {
			free, ref := mustPanic(t, func() { h.Free(b) }), mustPanic(t, func() { h.Ref(b) })
			if !strings.Contains(free, "belongs to an Arena") {
				t.Fatalf("checked=%v: Free of Arena memory: %q", checked, free)
			}
			if !strings.Contains(ref, "belongs to an Arena") || !strings.HasPrefix(ref, "offheap: Ref of") {
				t.Errorf("checked=%v: Ref of Arena memory: %q, want it to say what Free says", checked, ref)
			}
		}
		a.Release()
	}
}
