package offheap

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A misuse may fail, never harm others: every refusal below panics or
// returns an error while other goroutines allocate, fill, check, move and
// free blocks of the same heap, and afterwards those blocks hold what their
// owners wrote, the census is exact, and every lock the refusals passed
// through is free.

// misuseSize is the size of the misusing goroutine's blocks: a class the
// workers never allocate (misuseWorkerSize; see misusePair).
const misuseSize = 3000

// misusePair returns two live small blocks of misuseSize in one span (not
// a sampled heap's guarded samples, whose pages are a pool's). While
// keep lives the span stays its class's, so a block of it freed twice
// cannot have been handed out in between: its class is the misusing
// goroutine's alone, and the span's pages cannot go to a block of another
// class, as a span's do once it is empty and given back. (Handed to
// another goroutine in between, the second Free would free that
// goroutine's block: a misuse no allocator can tell from a correct Free.)
func misusePair(h *Heap) (b, keep []byte) {
	keep, b = h.Alloc(misuseSize), h.Alloc(misuseSize)
	for !sameSpan(h, addrOf(b), addrOf(keep)) {
		h.Free(keep)
		keep, b = b, h.Alloc(misuseSize)
	}
	return b, keep
}

// sameSpan reports whether a and b are blocks of one span: small blocks or
// Shareds' (placeOf tells the two apart by the block's first word).
func sameSpan(h *Heap, a, b uintptr) bool {
	p, q := h.placeOf(a), h.placeOf(b)
	small := func(k placeKind) bool { return k == placeSmall || k == placeShared }
	return small(p.kind) && small(q.kind) && p.span == q.span
}

// misuseWorkerSize draws the workers' sizes: small blocks up to 1 KiB and
// large ones, never misuseSize's class.
func misuseWorkerSize(r *rand.Rand) int {
	if r.IntN(16) == 0 {
		return maxSmall + 1 + r.IntN(100_000)
	}
	return 1 + r.IntN(1024)
}

// owned is a worker's block and the seed of its contents: the contents do
// not depend on the address, so they survive Realloc and Relocate.
type owned struct {
	b    []byte
	seed byte
}

func (o owned) fill() {
	for i := range o.b {
		o.b[i] = o.seed + byte(i)*13
	}
}

func (o owned) check() error {
	for i, x := range o.b {
		if want := o.seed + byte(i)*13; x != want {
			return fmt.Errorf("block %#x (%d bytes): byte %d is %#x, want %#x", addrOf(o.b), len(o.b), i, x, want)
		}
	}
	return nil
}

// refused runs f, which must panic with a message that starts "offheap:";
// it reports what went otherwise.
func refused(what string, f func()) (err error) {
	defer func() {
		r := recover()
		switch {
		case r == nil:
			err = fmt.Errorf("%s: no panic", what)
		case !strings.HasPrefix(fmt.Sprint(r), "offheap:"):
			err = fmt.Errorf("%s: panic %q does not start with offheap:", what, fmt.Sprint(r))
		}
	}()
	f()
	return nil
}

// misuseOnce commits every misuse of the list once, on blocks of its own
// and of other, another heap, and returns those that were not refused as
// they should be. It leaves h as it found it: what it allocates it frees.
func misuseOnce(h, other *Heap, rng *rand.Rand) error {
	var errs []error
	try := func(what string, f func()) {
		if err := refused(what, f); err != nil {
			errs = append(errs, err)
		}
	}
	b, keep := misusePair(h)
	big := h.Alloc(maxSmall + 1 + rng.IntN(50_000))
	try("Free of a block's inside", func() { h.Free(b[16:]) })
	try("Free of a large block's inside", func() { h.Free(big[pageSize:]) })
	try("Free of Go memory", func() { h.Free(make([]byte, 64)) })
	try("Relocate of Go memory", func() { h.Relocate(make([]byte, 100)) })
	ob := other.Alloc(misuseSize)
	try("Free of another heap's block", func() { h.Free(ob) })
	try("Realloc of another heap's block", func() { h.Realloc(ob, 10) })
	try("FreeRef of another heap's Ref", func() { h.FreeRef(other.Ref(ob)) })
	other.Free(ob)
	try("Ref of a block's inside", func() { h.Ref(b[8:]) })
	try("UsableSize of a block's inside", func() { h.UsableSize(b[8:]) })
	try("Alloc of a negative size", func() { h.Alloc(-1) })
	try("Realloc to a negative size", func() { h.Realloc(b, -5) })
	if _, err := h.TryAlloc(-1); err == nil {
		errs = append(errs, errors.New("TryAlloc(-1): no error"))
	}
	try("Realloc of a block's inside", func() { h.Realloc(b[32:], 10) })
	try("Relocate of a block's inside", func() { h.Relocate(b[8:]) })
	// RelocateAll stops at the entry it refuses: those before it hold what
	// Relocate returned, the rest are as they were.
	// Not b: a move would take it out of keep's span.
	bs := [][]byte{h.Alloc(misuseSize), big[16:], nil}
	try("RelocateAll of a block's inside", func() { h.RelocateAll(bs) })
	h.Free(bs[0])
	a := h.NewArena()
	ab := a.Alloc(100)
	try("Free of an Arena's block", func() { h.Free(ab) })
	try("Realloc of an Arena's block", func() { h.Realloc(ab, 200) })
	try("Relocate of an Arena's block", func() { h.Relocate(ab) })
	a.Release()
	l := h.NewLocal()
	lb := l.Alloc(misuseSize)
	try("Local.Free of a block's inside", func() { l.Free(lb[8:]) })
	try("Local.Free of Go memory", func() { l.Free(make([]byte, 128)) })
	l.Free(lb)
	l.Close()
	h.Free(big)
	// The second Free of b: no one was handed b in between (misusePair).
	h.Free(b)
	try("second Free of a block", func() { h.Free(b) })
	try("Realloc of a freed block", func() { h.Realloc(b, 100) })
	h.Free(keep)
	// Two Shareds in one span, for the same reason as b and keep
	// (misusePair).
	var held []Shared
	var sh, shKeep Shared
	for found := false; !found; {
		s := h.NewShared(misuseSize)
		for _, o := range held {
			if !found && sameSpan(h, s.block(), o.block()) {
				sh, shKeep, found = s, o, true
			}
		}
		held = append(held, s)
	}
	for _, o := range held {
		if o != sh && o != shKeep {
			o.Release()
		}
	}
	sh.Release()
	try("second Release of a Shared", sh.Release)
	shKeep.Release()
	return errors.Join(errs...)
}

// TestMisuseHarmsNoOne: misuses in one goroutine, refused while workers use
// the heap, leave the workers' blocks, the census and the locks as they
// were, in each mode of the heap.
func TestMisuseHarmsNoOne(t *testing.T) {
	arms := map[string]Options{
		"fast":      {},
		"nomag":     {MagazineDepth: -1},
		"checked":   {Checked: true},
		"sampled":   {GuardOneIn: 7},
		"hugepages": {HugePages: true},
	}
	rounds := 400
	if testing.Short() {
		rounds = 100
	}
	for name, opts := range arms {
		t.Run(name, func(t *testing.T) {
			h := newTestHeap(t, opts)
			other := newTestHeap(t, Options{})
			var stop atomic.Bool
			var wg sync.WaitGroup
			for w := range 3 {
				wg.Go(func() { misuseWorker(t, h, w, &stop) })
			}
			rng := rand.New(rand.NewPCG(1, 2))
			for i := range rounds {
				if err := misuseOnce(h, other, rng); err != nil {
					t.Errorf("round %d: %v", i, err)
					break
				}
			}
			stop.Store(true)
			wg.Wait()
			if t.Failed() {
				return
			}

			// Every lock free: one more of each kind of block, under a
			// deadline, where a lock left held would hang.
			done := make(chan struct{})
			go func() {
				defer close(done)
				for _, n := range []int{1, 64, misuseSize, maxSmall, maxSmall + 1, 1 << 20} {
					h.Free(h.Alloc(n))
				}
				h.RelocateGain()
				h.Trim()
			}()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("the heap's calls hang after the misuses: a lock left held")
			}
			if st := h.Stats(); st.LiveBlocks != 0 || st.InUseBytes != 0 || st.Allocs != st.Frees {
				t.Errorf("census after the misuses: %d live blocks, %d bytes in use, %d allocs, %d frees",
					st.LiveBlocks, st.InUseBytes, st.Allocs, st.Frees)
			}
		})
	}
}

// misuseWorker allocates, fills, checks, reallocates, relocates and frees
// blocks of h until stop, and reports a block whose contents changed.
func misuseWorker(t *testing.T, h *Heap, w int, stop *atomic.Bool) {
	rng := rand.New(rand.NewPCG(uint64(w), 9))
	var held []owned
	l := h.NewLocal()
	defer l.Close()
	for i := 0; !stop.Load() || len(held) > 0; i++ {
		if stop.Load() || len(held) > 200 || (len(held) > 0 && rng.IntN(3) == 0) {
			k := rng.IntN(len(held))
			o := held[k]
			held[k] = held[len(held)-1]
			held = held[:len(held)-1]
			if err := o.check(); err != nil {
				t.Errorf("worker %d: %v", w, err)
				return
			}
			switch rng.IntN(4) {
			case 0:
				l.Free(o.b)
			case 1: // grown or shrunk: the kept bytes must come along
				n, kept := misuseWorkerSize(rng), len(o.b)
				o.b = h.Realloc(o.b, n)
				if err := (owned{o.b[:min(n, kept)], o.seed}).check(); err != nil {
					t.Errorf("worker %d: after Realloc: %v", w, err)
				}
				o.fill()
				held = append(held, o)
			case 2:
				o.b, _ = h.Relocate(o.b)
				if err := o.check(); err != nil {
					t.Errorf("worker %d: after Relocate: %v", w, err)
					return
				}
				held = append(held, o)
			default:
				h.Free(o.b)
			}
			continue
		}
		o := owned{b: h.Alloc(misuseWorkerSize(rng)), seed: byte(rng.Uint32())}
		if rng.IntN(4) == 0 {
			h.Free(o.b)
			o.b = l.Alloc(misuseWorkerSize(rng))
		}
		o.fill()
		held = append(held, o)
	}
}

// TestOwnedCheckControl: a worker's block changed by someone else is
// caught.
func TestOwnedCheckControl(t *testing.T) {
	h := newTestHeap(t, Options{})
	o := owned{b: h.Alloc(300), seed: 5}
	o.fill()
	if err := o.check(); err != nil {
		t.Fatal(err)
	}
	o.b[211] ^= 1
	if o.check() == nil {
		t.Fatal("check missed a changed byte")
	}
	h.Free(o.b)
}
