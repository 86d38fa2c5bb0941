package offheap

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

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
