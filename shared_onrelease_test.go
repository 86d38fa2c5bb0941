package offheap

// Shared's OnLastRelease callbacks: their order, their panics, and a Free
// from inside one.

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// TestSharedOnReleaseTree releases trees of 100k handles whose OnLastRelease
// releases their children: no deadlock, no recursion per level, no leak.
func TestSharedOnReleaseTree(t *testing.T) {
	const n = 100_000
	shapes := []struct {
		name     string
		children func(i int) []int
	}{
		{"chain", func(i int) []int {
			if i+1 < n {
				return []int{i + 1}
			}
			return nil
		}},
		{"binary", func(i int) []int {
			var c []int
			for _, k := range []int{2*i + 1, 2*i + 2} {
				if k < n {
					c = append(c, k)
				}
			}
			return c
		}},
		{"star", func(i int) []int {
			if i == 0 {
				c := make([]int, n-1)
				for k := range c {
					c[k] = k + 1
				}
				return c
			}
			return nil
		}},
	}
	for _, shape := range shapes {
		t.Run(shape.name, func(t *testing.T) {
			h := sharedHeap(t)
			base := sharedLive(h)
			baseBytes := h.Stats().InUseBytes
			kids := make([][]Shared, n)
			var calls, minDepth, maxDepth int
			var pcs [512]uintptr
			onRelease := func(b []byte) {
				calls++
				d := runtime.Callers(0, pcs[:])
				if calls == 1 {
					minDepth = d
				}
				maxDepth = max(maxDepth, d)
				id := binary.LittleEndian.Uint32(b)
				ReleaseShared(kids[id])
			}
			nodes := make([]Shared, n)
			for i := range nodes {
				opts := []SharedOption{OnLastRelease(onRelease)}
				if i%3 == 1 {
					opts = append(opts, Hot())
				}
				nodes[i] = h.NewShared(4+i%40, opts...)
				binary.LittleEndian.PutUint32(nodes[i].Bytes(), uint32(i))
			}
			for i := range nodes {
				for _, k := range shape.children(i) {
					kids[i] = append(kids[i], nodes[k])
				}
			}
			root := nodes[0]
			clear(nodes)
			done := make(chan struct{})
			go func() {
				defer close(done)
				root.Release()
			}()
			waitClosed(t, "releasing the tree: a deadlock", done)
			if calls != n {
				t.Fatalf("%d OnLastRelease calls, want %d", calls, n)
			}
			if maxDepth > minDepth+2 {
				t.Fatalf("callbacks ran %d frames deep, the first %d: recursion per level", maxDepth, minDepth)
			}
			if got := sharedLive(h); got != base {
				t.Fatalf("%d blocks live, want 0", got-base)
			}
			if got := h.Stats().InUseBytes; got != baseBytes {
				t.Fatalf("InUseBytes %d after the tree, %d before", got, baseBytes)
			}
		})
	}
}

// TestSharedOnReleasePanic: a callback that panics still frees its block and
// the pending ones, and the goroutine can release again afterwards.
func TestSharedOnReleasePanic(t *testing.T) {
	h := sharedHeap(t)
	base := sharedLive(h)
	var ran int
	child := h.NewShared(8, OnLastRelease(func([]byte) { ran++ }))
	parent := h.NewShared(8, OnLastRelease(func([]byte) {
		child.Release()
		panic("boom")
	}))
	if msg := sharedPanic(parent.Release); msg != "boom" {
		t.Fatalf("panic %q, want boom", msg)
	}
	if ran != 1 {
		t.Fatalf("the pending callback ran %d times", ran)
	}
	x := h.NewShared(8, OnLastRelease(func([]byte) { ran++ }))
	x.Release()
	if ran != 2 {
		t.Fatal("a later callback on the same goroutine did not run")
	}
	if got := sharedLive(h); got != base {
		t.Fatalf("%d blocks live, want 0", got-base)
	}
}

// TestSharedOnReleasePanics: any number of callbacks in one release tree
// may panic: every pending callback still runs, every block is freed, and
// the Release then panics with the first panic's value. Before the fix the
// second panic stopped the rest, whose blocks leaked.
func TestSharedOnReleasePanics(t *testing.T) {
	for _, parentPanics := range []bool{true, false} {
		h := sharedHeap(t)
		base := sharedLive(h)
		const n = 20
		ran := map[int]bool{}
		kids := make([]Shared, n)
		for i := range kids {
			kids[i] = h.NewShared(8, OnLastRelease(func([]byte) {
				ran[i] = true
				if i%3 == 0 {
					if i == 9 {
						x := h.NewShared(8, OnLastRelease(func([]byte) { ran[-1] = true; panic("grandchild") }))
						x.Release() // queued behind this callback
					}
					panic(fmt.Sprintf("kid %d", i))
				}
			}))
		}
		parent := h.NewShared(8, OnLastRelease(func([]byte) {
			ReleaseShared(kids) // all queued: they run after this callback, last first
			if parentPanics {
				panic("parent")
			}
		}))
		want := "kid 18" // the last queued runs first
		if parentPanics {
			want = "parent"
		}
		if msg := sharedPanic(parent.Release); msg != want {
			t.Errorf("Release panicked with %q, want the first panic, %q", msg, want)
		}
		if len(ran) != n+1 {
			t.Errorf("%d of %d callbacks ran", len(ran), n+1)
		}
		if got := sharedLive(h); got != base {
			t.Errorf("%d blocks live after the tree, want 0", got-base)
		}
	}
}

// TestSharedFreeInOnRelease: a Free of a Shared's bytes inside its own
// OnRelease is refused with the Shared's message, and the block is still
// freed once, after the callback.
func TestSharedFreeInOnRelease(t *testing.T) {
	for _, mode := range []string{"fast", "checked"} {
		t.Run(mode, func(t *testing.T) {
			h := sharedHeapFor(t, mode)
			var msg string
			s := h.NewShared(32, OnLastRelease(func(b []byte) { msg = sharedPanic(func() { h.Free(b) }) }))
			s.Release()
			if !strings.Contains(msg, "the bytes of a Shared: a Shared is freed by its last Release, not by Free") {
				t.Fatalf("Free of a Shared's bytes in its OnRelease: panic %q", msg)
			}
			if st := h.Stats(); st.LiveBlocks != 0 {
				t.Fatalf("%d live blocks", st.LiveBlocks)
			}
		})
	}
}
