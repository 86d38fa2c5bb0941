package offheap

// Checked mode as a whole: its census, its limit, its sampling, its
// poison, and the seam through which the heap reaches the checker.

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"
)

func TestCheckedStats(t *testing.T) {
	withQuarantine(t, 16, 1<<20)
	h := checkedHeap(t, Options{})
	var live [][]byte
	var inUse uint64
	for i := range 1000 {
		n := 1 + i*37%5000
		if i%50 == 0 {
			n = 40_000 + i
		}
		b := h.Alloc(n)
		live = append(live, b)
		inUse += blockBytesChecked(n)
		if i%2 == 1 {
			h.Free(live[0])
			inUse -= blockBytesChecked(len(live[0]))
			live = live[1:]
		}
	}
	s := h.Stats()
	if s.Allocs != 1000 || s.Frees != 500 || s.InUseBytes != inUse ||
		s.MagazineHits+s.LocalHits+s.CentralHits+s.Fresh+s.Large != s.Allocs {
		t.Fatalf("Stats %+v, want 1000 allocs, 500 frees, %d bytes in use", s, inUse)
	}
	for _, b := range live {
		h.Free(b)
	}
	h.Trim() // empties the quarantine
	if s := h.Stats(); s.Frees != 1000 || s.InUseBytes != 0 {
		t.Fatalf("after freeing all: %+v", s)
	}
	closeClean(t, h)
}

// blockBytesChecked is what a checked block of n bytes holds of the heap.
func blockBytesChecked(n int) uint64 {
	if n+canaryLen > maxSmall {
		return uint64((n + canaryLen + pageSize - 1) &^ (pageSize - 1))
	}
	return uint64(classSize[checkedClass(n)])
}

func TestCheckedLimitFlushesQuarantine(t *testing.T) {
	h := checkedHeap(t, Options{Limit: 4 << 20})
	for range 200 { // 20 MB through a 4 MB heap: the quarantine must give way
		b, err := h.TryAlloc(100_000)
		if err != nil {
			t.Fatal(err)
		}
		h.Free(b)
	}
	closeClean(t, h)
}

func TestCheckedConcurrent(t *testing.T) {
	h := checkedHeap(t, Options{})
	const workers, rounds = 4, 2000
	ch := make(chan []byte, 64)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(2)
		go func() { // allocates, and hands half its blocks to a freer
			defer wg.Done()
			var mine [][]byte
			for i := range rounds {
				b := h.Alloc(1 + (i*31+w)%3000)
				b[0] = byte(i)
				if i%2 == 0 {
					ch <- b
				} else {
					mine = append(mine, b)
				}
				if len(mine) > 8 {
					h.Free(mine[0])
					mine = mine[1:]
				}
			}
			for _, b := range mine {
				h.Free(b)
			}
		}()
		go func() { // frees blocks other goroutines allocated
			defer wg.Done()
			for range rounds / 2 {
				h.Free(<-ch)
			}
		}()
	}
	wg.Wait()
	if s := h.Stats(); s.Allocs != workers*rounds || s.Frees != s.Allocs || s.InUseBytes != 0 {
		t.Fatalf("Stats %+v", s)
	}
	closeClean(t, h)
}

func TestErrorKindString(t *testing.T) {
	for k, want := range map[ErrorKind]string{DoubleFree: "double free", InvalidFree: "invalid free",
		ForeignFree: "foreign free", WriteAfterFree: "write after free", Corrupted: "corrupted block", 0: "ErrorKind(0)"} {
		if k.String() != want {
			t.Errorf("%d: %q, want %q", int(k), k, want)
		}
	}
}

func TestSampleRateOffCostsNothing(t *testing.T) {
	if buildChecked {
		t.Skip("checked mode's magazines decline every allocation: TestCheckedMagazinesDecline")
	}
	h := newTestHeap(t, Options{ProfileBytes: -1})
	h.Free(h.Alloc(64)) // installs this P's magazine
	for _, m := range h.mags.all {
		for c := 1; c < numClasses; c++ {
			if m.cls[c].sampleAt != math.MaxUint64 {
				t.Fatalf("class %d: sampleAt %d in a heap that does not sample", c, m.cls[c].sampleAt)
			}
		}
	}
	if h.chk != nil {
		t.Fatal("fast heap has a checker")
	}
}

// TestCheckedSampleRate is a checked heap that also samples: its small
// blocks are small blocks or guarded ones, both kinds are checked, and
// the guarded ones are one in GuardOneIn. (Positive control: with
// guardTick taking one in 2*GuardOneIn, 50 of 300 are guarded, and this
// test fails; a range of 50 to 150 let that pass.)
func TestCheckedSampleRate(t *testing.T) {
	h := checkedHeap(t, Options{GuardOneIn: 3})
	guarded := 0
	for i := range 300 {
		b := h.Alloc(1 + i%200)
		info, ok := h.Lookup(addrOf(b))
		if !ok || info.Size != len(b) {
			t.Fatalf("Lookup: %+v %v", info, ok)
		}
		if info.Guarded {
			guarded++
		}
		h.Free(b)
		if me := memoryError(t, func() { h.Free(b) }); me.Kind != DoubleFree {
			t.Fatalf("double free: %v", me)
		}
	}
	// A checked heap counts every allocation toward the guard pages
	// (guardTick): one goroutine's 300 give exactly 100.
	if guarded != 100 {
		t.Fatalf("%d of 300 guarded at GuardOneIn 3, want 100", guarded)
	}
	closeClean(t, h)
}

// TestPoisonWords checks the poison check on its own: for every class
// size, one byte changed anywhere in a poisoned block is found, whatever
// the value written, and a block left alone is not reported. (Positive
// control: with the differences of a word pair combined as
// p[0]^w | p[1]^w, which Go reads as ((p[0]^w)|p[1])^w, a zero written
// into an even word was missed, and this test failed.)
func TestPoisonWords(t *testing.T) {
	buf := make([]uint64, maxSmall/8)
	a := uintptr(unsafe.Pointer(&buf[0]))
	for cl := 1; cl < numClasses; cl++ {
		n := classSize[cl]
		b := bytesAt(a, int(n))
		poisonWords(a, n)
		if !poisonedWords(a, n) {
			t.Fatalf("class size %d: fresh poison reported as written", n)
		}
		step := max(int(n)/97, 1) // every byte of the small classes
		for i := 0; i < int(n); i += step {
			for _, v := range []byte{0, 1, poisonByte ^ 0x80, 0xff} {
				b[i] = v
				if poisonedWords(a, n) {
					t.Fatalf("class size %d: byte %d set to %#x not found", n, i, v)
				}
				b[i] = poisonByte
			}
		}
		if !poisonedWords(a, n) || !poisoned(b) {
			t.Fatalf("class size %d: poison restored, still reported", n)
		}
	}
	runtime.KeepAlive(buf) // a is a uintptr: without this the collector may free buf, and the next owner write it
}

// TestCheckedMagazinesDecline: a checked heap's magazines hold blocks, which
// the checker takes, yet the fast path declines every allocation, since
// take keeps sampleAt equal to hits. Positive control: with sampleAt moved
// past hits, the fast path pops a block the checker never saw.
func TestCheckedMagazinesDecline(t *testing.T) {
	withQuarantine(t, 1, 1<<20) // freed blocks reach the magazine at once
	h := checkedHeap(t, Options{})
	var bs [][]byte
	for range 64 {
		bs = append(bs, h.Alloc(64))
	}
	for _, b := range bs {
		h.Free(b)
	}
	cl := checkedClass(64)
	n := int(classSize[cl])
	stocked := 0
	for _, m := range h.mags.all {
		mc := &m.cls[cl]
		stocked += int(mc.n)
		if mc.hits != mc.sampleAt {
			t.Fatalf("class %d: sampleAt %d, hits %d", cl, mc.sampleAt, mc.hits)
		}
	}
	if stocked == 0 {
		t.Fatal("no block of the class in any magazine: the test cannot tell")
	}
	for range 2 * stocked {
		if a := h.allocFast(n); a != 0 {
			t.Fatalf("the fast path took %#x from a checked heap's magazine", a)
		}
	}
	for _, m := range h.mags.all {
		m.cls[cl].sampleAt++
	}
	a := h.allocFast(n)
	for _, m := range h.mags.all {
		m.cls[cl].sampleAt--
	}
	if a == 0 {
		t.Fatal("control: with sampleAt past hits the fast path still declined")
	}
}

// TestCheckedRacingDoubleFree: two Frees of one block at once, small, large
// or guarded: the record's compare-and-swap lets exactly one proceed, and
// the other panics with DoubleFree.
func TestCheckedRacingDoubleFree(t *testing.T) {
	for _, c := range []struct {
		opts Options
		n    int
	}{{Options{}, 64}, {Options{}, 400_000}, {Options{GuardPages: true}, 64}} {
		h := checkedHeap(t, c.opts)
		for range 100 {
			b := h.Alloc(c.n)
			var panics atomic.Int32
			var start, done sync.WaitGroup
			start.Add(1)
			for range 2 {
				done.Go(func() {
					defer func() {
						if r := recover(); r != nil {
							var me *MemoryError
							if err, ok := r.(error); !ok || !errors.As(err, &me) || me.Kind != DoubleFree {
								t.Errorf("%d bytes %+v: panic %v, want a double free", c.n, c.opts, r)
							}
							panics.Add(1)
						}
					}()
					start.Wait()
					h.Free(b)
				})
			}
			start.Done()
			done.Wait()
			if p := panics.Load(); p != 1 {
				t.Fatalf("%d bytes %+v: %d of two racing Frees panicked, want 1", c.n, c.opts, p)
			}
		}
		closeClean(t, h)
	}
}

// TestCheckerSeam holds the layering to the code: of the files that are
// not the checker's (checked*.go), only Heap's declaration and the
// lifecycle's (Close, Stats) name the checker's field. Alloc, Free and the
// rest reach the checker through the seam's functions (Heap.checkAlloc,
// checkFree, checkLive) or a method of a checked*.go file.
func TestCheckerSeam(t *testing.T) {
	seam := map[string]bool{"heap.go": true, "closing.go": true, "census.go": true}
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	chk := regexp.MustCompile(`\.chk\b`)
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") || strings.HasPrefix(name, "checked") || seam[name] {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if chk.Match(src) {
			t.Errorf("%s names the checker's field (.chk): reach the checker through the seam (Heap.checkAlloc, checkFree, checkLive) or a method of a checked*.go file", name)
		}
	}
}
