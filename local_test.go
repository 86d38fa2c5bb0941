package offheap

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// TestLocalCensus: every Alloc and Free through a Local is counted once,
// as LocalHits where its stack served it, and Stats's identity and per-class
// counts hold while the Local is open, after Flush, after Close and after
// the heap's Close; InUse agrees with Stats.
func TestLocalCensus(t *testing.T) {
	for _, arm := range modeArms {
		t.Run(arm.name, func(t *testing.T) {
			h := newTestHeap(t, unprofiled(arm.opts))
			c := h.NewLocal()
			var want census
			var live [][]byte
			sizes := testSizes()
			for round := range 3 {
				for i, n := range sizes {
					var b []byte
					if i%2 == 0 {
						b = c.Alloc(n)
					} else {
						b = c.AllocUnzeroed(n)
					}
					want.allocs++
					if n > maxSmall {
						want.large++
					}
					live = append(live, b)
				}
				for i, b := range live {
					if i%3 == round%3 {
						h.Free(b) // a Local's block, freed by the heap
					} else {
						c.Free(b)
					}
					want.frees++
				}
				live = live[:0]
				check := func(when string) {
					t.Helper()
					s := h.Stats()
					if err := checkCensusOf(h, s, want); err != nil {
						t.Fatalf("round %d, %s: %v", round, when, err)
					}
					if bytes, blocks := h.InUse(); bytes != s.InUseBytes || blocks != s.LiveBlocks {
						t.Fatalf("round %d, %s: InUse %d bytes, %d blocks; Stats %d, %d", round, when, bytes, blocks, s.InUseBytes, s.LiveBlocks)
					}
					checked := h.checked()
					if !checked && s.LocalHits == 0 && round > 0 {
						t.Fatalf("round %d, %s: no LocalHits in a fast or sampled heap: %v", round, when, s)
					}
					if checked && (s.LocalHits != 0 || s.LocalBytes != 0) {
						t.Fatalf("round %d, %s: a checked heap's Local held blocks: %v", round, when, s)
					}
				}
				check("open")
				if round == 1 {
					c.Flush()
					check("flushed")
					if s := h.Stats(); s.LocalBytes != 0 {
						t.Fatalf("LocalBytes %d after Flush", s.LocalBytes)
					}
				}
			}
			hits := h.Stats().LocalHits
			c.Close()
			s := h.Stats()
			if err := checkCensusOf(h, s, want); err != nil {
				t.Fatalf("after the Local's Close: %v", err)
			}
			if s.LocalHits != hits || s.LocalBytes != 0 {
				t.Fatalf("after the Local's Close: LocalHits %d (was %d), LocalBytes %d", s.LocalHits, hits, s.LocalBytes)
			}
			// A new Local takes the closed one's state, and its census
			// goes on from there.
			c = h.NewLocal()
			c.Free(c.Alloc(64))
			c.Free(c.Alloc(64))
			want.allocs += 2
			want.frees += 2
			if err := checkCensusOf(h, h.Stats(), want); err != nil {
				t.Fatalf("a second Local: %v", err)
			}
			hits = h.Stats().LocalHits
			h.Close()
			if err := checkCensusOf(h, h.Stats(), want); err != nil {
				t.Fatalf("after the heap's Close: %v", err)
			}
			if s := h.Stats(); s.LocalHits != hits {
				t.Fatalf("after the heap's Close: LocalHits %d, was %d", s.LocalHits, hits)
			}
		})
	}
}

// checkCensusOf is checkCensus, less the count of large blocks in a heap
// with a checker: a checked block is longer than asked, a sampled one a
// page run of its own.
func checkCensusOf(h *Heap, s Stats, want census) error {
	if h.chk != nil {
		want.large = s.Large
	}
	return checkCensus(s, want)
}

// TestLocalFreeAgrees: Local.Free refuses what Heap.Free refuses, with the
// same message, and leaves the heap intact: Go memory, another heap's
// block, an address inside a block, an arena's memory, and a double free
// wherever the first Free left the block (the Local's stack, another
// Local's, a magazine, a depot batch). Local.Free is Heap.Free's fast path
// written out; this holds the two copies together.
func TestLocalFreeAgrees(t *testing.T) {
	for _, arm := range modeArms {
		t.Run(arm.name, func(t *testing.T) {
			h := newTestHeap(t, unprofiled(arm.opts))
			other := newTestHeap(t, unprofiled(Options{}))
			c := h.NewLocal()
			defer c.Close()
			a := h.NewArena()
			defer a.Release()
			for _, n := range []int{8, 16, 64, 1000, 20000, 40000, maxSmall, maxSmall + 1} {
				b := c.Alloc(n)
				cases := map[string][]byte{
					"Go memory":            make([]byte, n),
					"another heap's block": other.Alloc(n),
					"an arena's memory":    a.Alloc(n),
				}
				if n > 8 {
					cases["inside a block"] = b[8:]
				}
				for what, x := range cases {
					want := sharedPanic(func() { h.Free(x) })
					got := sharedPanic(func() { c.Free(x) })
					if want == "" || stripAddrs(got) != stripAddrs(want) {
						t.Errorf("n=%d, %s: Local.Free panicked %q, Heap.Free %q", n, what, got, want)
					}
				}
				c.Free(b)
				if n == 8 || n > maxSmall {
					continue // no key: fast mode does not see it (doublefree.go)
				}
				wantDoubleFree(t, h, fmt.Sprintf("n=%d, in the Local", n), addrOf(b), n, func() { c.Free(b) })
				wantDoubleFree(t, h, fmt.Sprintf("n=%d, in the Local, by the heap", n), addrOf(b), n, func() { h.Free(b) })
				d := h.NewLocal()
				wantDoubleFree(t, h, fmt.Sprintf("n=%d, in the Local, by another Local", n), addrOf(b), n, func() { d.Free(b) })
				d.Close()
				b = h.Alloc(n)
				h.Free(b)
				wantDoubleFree(t, h, fmt.Sprintf("n=%d, in the heap, by the Local", n), addrOf(b), n, func() { c.Free(b) })
			}
			// Intact: every block handed out once.
			var blocks [][]byte
			for i := range 3 * maxDepth {
				blocks = append(blocks, c.Alloc(16+i%2000))
			}
			for range 3 * maxDepth {
				blocks = append(blocks, h.Alloc(64))
			}
			distinct(t, "after the refused Frees", blocks)
			for _, b := range blocks {
				c.Free(b)
			}
		})
	}
}

// TestLocalFreeShortCap: a slice of a block with a smaller capacity than
// the block's, whose capacity names a smaller class, frees the block its
// start is, as Heap.Free does; a second Free of it is a double free.
func TestLocalFreeShortCap(t *testing.T) {
	skipChecked(t)
	h := newTestHeap(t, unprofiled(Options{}))
	c := h.NewLocal()
	defer c.Close()
	for _, n := range []int{16, 64, 1000, 20000} {
		b := c.Alloc(n)
		before := h.Stats()
		c.Free(b[:1:1])
		if s := h.Stats(); s.Frees != before.Frees+1 || s.LiveBlocks != before.LiveBlocks-1 {
			t.Fatalf("n=%d: Free(b[:1:1]) counted %d frees, %d live blocks; before %d, %d", n, s.Frees, s.LiveBlocks, before.Frees, before.LiveBlocks)
		}
		wantDoubleFree(t, h, fmt.Sprintf("n=%d, freed with a short capacity", n), addrOf(b), n, func() { c.Free(b) })
	}
}

// stripAddrs drops the hexadecimal addresses from a message, which differ
// between two refusals of different blocks.
func stripAddrs(msg string) string {
	f := strings.Fields(msg)
	for i, w := range f {
		if strings.HasPrefix(strings.Trim(w, "(),:"), "0x") {
			f[i] = "ADDR"
		}
	}
	return strings.Join(f, " ")
}

// TestLocalBound: a Local that only frees holds at most cacheBound bytes,
// which is a few MiB, and hands the rest on: blocks a producer allocates
// from the heap and a consumer frees through its Local go back to the
// central lists, where the producer finds them again.
func TestLocalBound(t *testing.T) {
	skipChecked(t)
	if b := cacheBound(0); b > 4<<20 || b < 1<<20 {
		t.Fatalf("cacheBound(0) = %d bytes, want 1-4 MiB", b)
	}
	for _, depth := range []int{0, 1, MaxMagazineDepth, -1} {
		t.Run(fmt.Sprint("depth=", depth), func(t *testing.T) {
			h := newTestHeap(t, unprofiled(Options{MagazineDepth: depth}))
			c := h.NewLocal()
			defer c.Close()
			bound := uint64(cacheBound(depth))
			for _, n := range []int{8, 64, 1000, 16 << 10, cacheMax} {
				for range 4 {
					var blocks [][]byte
					for range 2 * maxDepth {
						blocks = append(blocks, h.AllocUnzeroed(n))
					}
					for _, b := range blocks {
						c.Free(b)
					}
				}
			}
			s := h.Stats()
			if s.LocalBytes > bound || s.LocalBytes == 0 {
				t.Fatalf("a Local that only frees holds %d bytes; its bound is %d", s.LocalBytes, bound)
			}
			if held := uint64(cacheHeld(c)); held != s.LocalBytes {
				t.Fatalf("LocalBytes %d, the Local's stacks hold %d", s.LocalBytes, held)
			}
		})
	}
}

// skipChecked skips a test of a Local's stacks in the offheapchecked
// build, whose Locals hold no blocks.
func skipChecked(t *testing.T) {
	if buildChecked {
		t.Skip("offheapchecked: a Local passes every call to the checked heap")
	}
}

// TestLocalFillsItsStacks: a Local's Allocs come from its stacks once a
// refill stocked them, and its Frees go back to them: the blocks a Local
// frees are the ones it hands out next.
func TestLocalFillsItsStacks(t *testing.T) {
	skipChecked(t)
	h := newTestHeap(t, unprofiled(Options{}))
	c := h.NewLocal()
	defer c.Close()
	b := c.AllocUnzeroed(64)
	before := h.Stats()
	c.Free(b)
	if x := c.Alloc(64); addrOf(x) != addrOf(b) {
		t.Fatalf("the Local handed out %#x after freeing %#x", addrOf(x), addrOf(b))
	}
	if s := h.Stats(); s.LocalHits != before.LocalHits+1 || s.MagazineHits != before.MagazineHits || s.CentralHits+s.Fresh != before.CentralHits+before.Fresh {
		t.Fatalf("a Local's pop counted as %v, was %v", s, before)
	}
}

// TestLocalServesEverySize: for every size a Local holds, zeroed and
// unzeroed, a pair after the first is served by the Local's stack. Before the fix AllocUnzeroed of 8
// bytes or less refilled on every call, and dropped the stack it had.
func TestLocalServesEverySize(t *testing.T) {
	skipChecked(t)
	h := newTestHeap(t, unprofiled(Options{}))
	c := h.NewLocal()
	defer c.Close()
	for _, n := range []int{1, 8, 9, 16, 64, 1000, cacheMax} {
		for _, zero := range []bool{true, false} {
			alloc := c.AllocUnzeroed
			if zero {
				alloc = c.Alloc
			}
			c.Free(alloc(n))
			before := h.Stats()
			for range 10 {
				c.Free(alloc(n))
			}
			if s := h.Stats(); s.LocalHits-before.LocalHits != 10 {
				t.Errorf("n=%d, zero=%v: %d of 10 Allocs from the Local's stack (%v)", n, zero, s.LocalHits-before.LocalHits, s)
			}
		}
	}
}

// TestLocalAtLimit: at the heap's Limit, a Local's refill that the limit
// refuses gives the Local's own blocks back first, so that the heap's
// reclaim finds them: a Local holding a block of one class after another
// does not make the heap refuse what it has room for.
func TestLocalAtLimit(t *testing.T) {
	skipChecked(t)
	h := newTestHeap(t, unprofiled(Options{Limit: 1 << 20, ReleaseDelay: -1}))
	c := h.NewLocal()
	defer c.Close()
	noPanic(t, func() {
		for cl := 2; cl < numClasses && classSize[cl] <= 4096; cl++ {
			c.Free(c.Alloc(int(classSize[cl]))) // a span of its own per class
		}
	})
}

// TestLocalTryAlloc: a Local's TryAlloc returns the heap's errors where
// Alloc panics with them (a request over the Limit, a negative size) and
// loses nothing: every block it handed out frees, and the heap ends empty.
func TestLocalTryAlloc(t *testing.T) {
	for _, arm := range modeArms {
		t.Run(arm.name, func(t *testing.T) {
			opts := arm.opts
			opts.Limit, opts.ReleaseDelay = 4<<20, -1
			h := newTestHeap(t, unprofiled(opts))
			c := h.NewLocal()
			defer c.Close()
			if b, err := c.TryAlloc(8 << 20); !errors.Is(err, ErrLimit) || b != nil {
				t.Errorf("TryAlloc(8 MiB) under a 4 MiB Limit: %d bytes, %v; want ErrLimit", len(b), err)
			}
			if _, err := c.TryAlloc(-1); !errors.Is(err, ErrSize) {
				t.Errorf("TryAlloc(-1): %v, want ErrSize", err)
			}
			var blocks [][]byte
			for {
				b, err := c.TryAlloc(1000)
				if err != nil {
					if !errors.Is(err, ErrLimit) {
						t.Fatalf("TryAlloc(1000) after %d blocks: %v, want ErrLimit", len(blocks), err)
					}
					break
				}
				if len(b) != 1000 || b[0] != 0 || b[999] != 0 {
					t.Fatalf("TryAlloc(1000): %d bytes, not zeroed", len(b))
				}
				b[0], b[999] = 1, 1
				blocks = append(blocks, b)
			}
			want := 100
			if r := arm.opts.GuardOneIn; r > 0 {
				// Every r-th block on a guarded run of two OS pages:
				// 128 KiB of the Limit each with 64 KiB pages. Half of what
				// fits, for the quarantine's and the draw's share.
				want = min(want, int(4<<20/(2*osPageBytes))*r/2)
			}
			if len(blocks) < want {
				t.Errorf("%d blocks of 1000 bytes under a 4 MiB Limit, want %d at least", len(blocks), want)
			}
			for _, b := range blocks {
				c.Free(b)
			}
			c.Flush()
			if s := h.Stats(); s.LiveBlocks != 0 {
				t.Errorf("%d blocks live after every block was freed", s.LiveBlocks)
			}
		})
	}
}

// TestLocalAfterClose: a closed Local's Alloc, AllocUnzeroed, Free and
// Flush panic, saying so; a second Close does nothing; the heap goes on.
func TestLocalAfterClose(t *testing.T) {
	for _, arm := range modeArms {
		t.Run(arm.name, func(t *testing.T) {
			h := newTestHeap(t, unprofiled(arm.opts))
			c := h.NewLocal()
			b := c.Alloc(64)
			c.Close()
			for what, f := range map[string]func(){
				"Alloc":         func() { c.Alloc(64) },
				"AllocUnzeroed": func() { c.AllocUnzeroed(64) },
				"TryAlloc":      func() { c.TryAlloc(64) },
				"large Alloc":   func() { c.Alloc(maxSmall + 1) },
				"Free":          func() { c.Free(b) },
				"Flush":         func() { c.Flush() },
			} {
				wantRefused(t, what+" after the Local's Close", f, "Local."+strings.Fields(what)[len(strings.Fields(what))-1], "after the Local's Close")
			}
			noPanic(t, c.Close)
			noPanic(t, func() { h.Free(b) })
		})
	}
}

// TestLocalHeapClosed: after the heap's Close, an open Local's Alloc,
// AllocUnzeroed, Free, Flush and Close panic with an error wrapping
// ErrClosed, never fault; a second Close does nothing. NewLocal panics
// likewise.
func TestLocalHeapClosed(t *testing.T) {
	for _, arm := range modeArms {
		t.Run(arm.name, func(t *testing.T) {
			h := newTestHeap(t, unprofiled(arm.opts))
			c := h.NewLocal()
			var blocks [][]byte
			for i := range 300 {
				blocks = append(blocks, c.Alloc(1+i*50))
			}
			for _, b := range blocks[:200] {
				c.Free(b)
			}
			h.Close()
			for _, n := range []int{16, 64, cacheMax + 1, maxSmall + 1} {
				wantClosed(t, fmt.Sprintf("Local.Alloc(%d)", n), func() error { c.Alloc(n); return nil })
				wantClosed(t, fmt.Sprintf("Local.AllocUnzeroed(%d)", n), func() error { c.AllocUnzeroed(n); return nil })
				wantClosed(t, fmt.Sprintf("Local.TryAlloc(%d)", n), func() error {
					b, err := c.TryAlloc(n)
					if b != nil {
						t.Errorf("Local.TryAlloc(%d) after the heap's Close: %d bytes", n, len(b))
					}
					return err
				})
			}
			wantClosed(t, "Local.Free", func() error { c.Free(blocks[250]); return nil })
			wantClosed(t, "NewLocal", func() error { h.NewLocal(); return nil })
			wantClosed(t, "Local.Flush", func() error { c.Flush(); return nil })
			wantClosed(t, "Local.Close", func() error { c.Close(); return nil })
			noPanic(t, c.Close)
		})
	}
}

// TestLocalTrim: Trim leaves a Local's blocks to it; Flush gives them back.
func TestLocalTrim(t *testing.T) {
	skipChecked(t)
	h := newTestHeap(t, unprofiled(Options{}))
	c := h.NewLocal()
	defer c.Close()
	var blocks [][]byte
	for range 100 {
		blocks = append(blocks, c.Alloc(64))
	}
	for _, b := range blocks {
		c.Free(b)
	}
	held := h.Stats().LocalBytes
	h.Trim()
	if s := h.Stats(); held == 0 || s.LocalBytes != held {
		t.Fatalf("LocalBytes %d before Trim, %d after", held, s.LocalBytes)
	}
	c.Flush()
	h.Trim()
	if s := h.Stats(); s.LocalBytes != 0 || s.DepotBytes != 0 || s.MagazineBytes != 0 {
		t.Fatalf("after Flush and Trim: %v", s)
	}
}

// TestLocalCleanup: a Local dropped unclosed gives its blocks back once
// the collector finds it unreachable; its state serves the next NewLocal.
func TestLocalCleanup(t *testing.T) {
	skipChecked(t)
	h := newTestHeap(t, unprofiled(Options{}))
	func() {
		c := h.NewLocal()
		var blocks [][]byte
		for range 100 {
			blocks = append(blocks, c.Alloc(64))
		}
		for _, b := range blocks {
			c.Free(b)
		}
	}()
	if h.Stats().LocalBytes == 0 {
		t.Fatal("the Local held nothing")
	}
	// The cleanup empties the state, then keeps it for the next NewLocal:
	// wait for the second step, or a NewLocal between the two maps a state
	// of its own.
	waitFor(t, func() string {
		return fmt.Sprintf("an unreachable Local still holds %d bytes, %d states spare", h.Stats().LocalBytes, spareCaches(h))
	}, func() bool {
		runtime.GC()
		return spareCaches(h) == 1
	})
	if b := h.Stats().LocalBytes; b != 0 {
		t.Fatalf("the unreachable Local's state was kept with %d bytes in it", b)
	}
	if n := cacheStates(h); n != 1 {
		t.Fatalf("%d Local states, want 1", n)
	}
	c := h.NewLocal()
	defer c.Close()
	if n := cacheStates(h); n != 1 {
		t.Fatalf("a new Local mapped a state of its own: %d states, want 1", n)
	}
}

// TestLocalCleanupAfterClose: the cleanup of a Local dropped unclosed runs
// safely after the heap's Close, and at the same time as it.
func TestLocalCleanupAfterClose(t *testing.T) {
	for i := range 20 {
		h, err := NewHeap(unprofiled(Options{}))
		if err != nil {
			t.Fatal(err)
		}
		func() {
			c := h.NewLocal()
			for range 10 {
				c.Free(c.Alloc(64))
			}
		}()
		if i%2 == 0 {
			runtime.GC() // the cleanup may run during Close
		}
		h.Close()
		runtime.GC()
	}
}

// TestLocalStress: workers, each with its own Local, allocate
// pattern-filled blocks and free them through their Locals, the heap, or
// another worker's (by handing them over a channel); every block's pattern
// is intact when freed, and the census is exact at the end.
func TestLocalStress(t *testing.T) {
	for _, arm := range modeArms {
		t.Run(arm.name, func(t *testing.T) {
			h := newTestHeap(t, unprofiled(arm.opts))
			const workers = 4
			ops := 20000
			if testing.Short() || arm.opts.Checked {
				ops = 3000
			}
			handoff := make(chan []byte, 64)
			var wg sync.WaitGroup
			var mu sync.Mutex
			var errs []error
			for w := range workers {
				wg.Go(func() {
					c := h.NewLocal()
					defer c.Close()
					rng := rand.New(rand.NewPCG(uint64(w), 9))
					var live [][]byte
					free := func(b []byte) {
						if err := checkFill(b); err != nil {
							mu.Lock()
							errs = append(errs, err)
							mu.Unlock()
						}
						if rng.IntN(4) == 0 {
							h.Free(b)
						} else {
							c.Free(b)
						}
					}
					for i := range ops {
						n := 1 + rng.IntN(2000)
						if rng.IntN(50) == 0 {
							n = 1 + rng.IntN(maxSmall+100_000)
						}
						var b []byte
						if i%2 == 0 {
							b = c.Alloc(n)
						} else {
							b = c.AllocUnzeroed(n)
						}
						fill(b)
						live = append(live, b)
						switch {
						case len(live) > 40:
							j := rng.IntN(len(live))
							free(live[j])
							live[j] = live[len(live)-1]
							live = live[:len(live)-1]
						case rng.IntN(8) == 0:
							select {
							case handoff <- live[len(live)-1]:
								live = live[:len(live)-1]
							case b := <-handoff:
								free(b)
							}
						}
					}
					for _, b := range live {
						free(b)
					}
					for {
						select {
						case b := <-handoff:
							free(b)
						default:
							return
						}
					}
				})
			}
			wg.Wait()
			for b := range len(handoff) {
				_ = b
				h.Free(<-handoff)
			}
			if err := errors.Join(errs...); err != nil {
				t.Fatal(err)
			}
			s := h.Stats()
			if s.Allocs != s.Frees || s.LiveBlocks != 0 || s.InUseBytes != 0 || s.LocalBytes != 0 {
				t.Fatalf("after every block was freed and every Local closed: %v", s)
			}
			if err := checkCensus(s, census{allocs: s.Allocs, frees: s.Allocs, large: s.Large}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

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

// TestLocalDroppedUnclosed: Locals dropped without Close, faster than
// collections come, do not pile up: NewLocal takes back the states of the
// ones the collector finds unreachable before it maps more than a bound.
func TestLocalDroppedUnclosed(t *testing.T) {
	if buildChecked {
		t.Skip("a checked heap's Locals hold no state")
	}
	h := newTestHeap(t, Options{})
	iters := 100_000
	if raceOn {
		iters = 20_000
	}
	for range iters {
		c := h.NewLocal()
		c.Free(c.Alloc(64))
	}
	s := h.Stats()
	t.Logf("%d iterations: %d states, %d KiB mapped, %d KiB in Locals", iters, cacheStates(h), s.MappedBytes>>10, s.LocalBytes>>10)
	if s.MappedBytes > 16<<20 {
		t.Fatalf("%d Locals dropped unclosed: %d MiB mapped (%d states, %d MiB in Locals), want at most 16", iters, s.MappedBytes>>20, cacheStates(h), s.LocalBytes>>20)
	}
	// The heap and its Locals stay usable.
	c := h.NewLocal()
	b := c.Alloc(64)
	c.Free(b)
	c.Close()
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
		if page, _ := h.pages.pageOf(addrOf(b)); uint8(*h.pages.entry(page)) == classGuarded { // in any region, as TestSampleRate
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
