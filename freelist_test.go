package offheap

import (
	"fmt"
	"regexp"
	"runtime"
	"strconv"
	"testing"
	"unsafe"
)

// The free lists against a hostile write after free (freelist.go): every
// test writes into freed blocks what an attacker would (a Go address, a
// wild one, a live block of the heap, a block of another span of the
// class) and then allocates until every freed block has been handed out or
// abandoned. No Alloc may return memory outside the heap, or a block that
// is live; a corrupt list must panic with the corruption's message, and
// the heap must work afterwards. Each flow runs in every magazine
// configuration and through a Local, several rounds, each with fresh keys:
// a check that passed by chance would show as a block out of place.

// corruptArm is a way of allocating and freeing: a magazine configuration,
// or a Local.
type corruptArm struct {
	name  string
	opts  Options
	cache bool
}

var corruptArms = []corruptArm{
	{"default", Options{}, false},
	{"depth1", Options{MagazineDepth: 1}, false},
	{"nomag", Options{MagazineDepth: -1}, false},
	{"cache", Options{}, true},
}

// corruptRE is what a detected corruption panics with.
var corruptRE = regexp.MustCompile(`^offheap: heap corruption: the free block at 0x[0-9a-f]+ \(([0-9]+) bytes\) was written after it was freed; .*Options\.Checked.*Options\.GuardOneIn`)

// allocator is an arm's Alloc, AllocUnzeroed and Free.
type allocator struct {
	h *Heap
	c *Local
}

func newAllocator(t *testing.T, arm corruptArm) allocator {
	h := newTestHeap(t, unprofiled(arm.opts))
	al := allocator{h: h}
	if arm.cache {
		al.c = h.NewLocal()
		t.Cleanup(al.c.Close)
	}
	return al
}

func (al allocator) alloc(n int, zero bool) []byte {
	switch {
	case al.c != nil && zero:
		return al.c.Alloc(n)
	case al.c != nil:
		return al.c.AllocUnzeroed(n)
	case zero:
		return al.h.Alloc(n)
	}
	return al.h.AllocUnzeroed(n)
}

func (al allocator) free(b []byte) {
	if al.c != nil {
		al.c.Free(b)
		return
	}
	al.h.Free(b)
}

// tryAlloc is al.alloc returning what it panicked with.
func (al allocator) tryAlloc(n int, zero bool) (b []byte, msg string) {
	defer func() {
		if r := recover(); r != nil {
			msg = fmt.Sprint(r)
		}
	}()
	return al.alloc(n, zero), ""
}

// checkHandedOut reports what is wrong with block b that an Alloc of n
// bytes returned, given the live blocks: it must be a block start of n's
// class in the heap, and not live.
func checkHandedOut(h *Heap, b []byte, n int, live map[uintptr]bool) error {
	a := addrOf(b)
	page, ok := h.pages.PageOf(a)
	if !ok {
		return fmt.Errorf("Alloc(%d) returned %#x, outside the heap", n, a)
	}
	e := *h.pages.Entry(page)
	c := sizeClass(n)
	if uint8(e) != c {
		return fmt.Errorf("Alloc(%d) returned %#x, on a page of class %d, not %d", n, a, uint8(e), c)
	}
	if q, into := blockIn(a, e, &classInfos[c]); into != 0 || q >= uint64(classInfos[c].blocks) {
		return fmt.Errorf("Alloc(%d) returned %#x, not a block start", n, a)
	}
	if live[a] {
		return fmt.Errorf("Alloc(%d) returned %#x, a live block", n, a)
	}
	return nil
}

// checkCorruptPanic reports what is wrong with msg, the panic of an Alloc
// of n bytes.
func checkCorruptPanic(msg string, n int) error {
	m := corruptRE.FindStringSubmatch(msg)
	if m == nil {
		return fmt.Errorf("Alloc(%d) panicked with %q, not a heap corruption", n, msg)
	}
	if size, _ := strconv.Atoi(m[1]); size != int(classSize[sizeClass(n)]) {
		return fmt.Errorf("the corruption names %d bytes, want %d: %s", size, classSize[sizeClass(n)], msg)
	}
	return nil
}

// checkWorks allocates and frees through every path, and checks the
// census's identity: the heap works, with no lock left held.
func checkWorks(t *testing.T, al allocator) {
	t.Helper()
	h := al.h
	for _, n := range []int{8, 64, 4096, 40000, maxSmall + 1} {
		var bs [][]byte
		for range 50 {
			b := al.alloc(n, true)
			fill(b)
			bs = append(bs, b)
		}
		for _, b := range bs {
			if err := checkFill(b); err != nil {
				t.Fatal(err)
			}
			al.free(b)
		}
	}
	h.Trim()
	s := h.Stats()
	if s.MagazineHits+s.LocalHits+s.CentralHits+s.Fresh+s.Large != s.Allocs {
		t.Fatalf("census: %d+%d+%d+%d+%d != Allocs %d", s.MagazineHits, s.LocalHits, s.CentralHits, s.Fresh, s.Large, s.Allocs)
	}
}

// attackValues are the words an attacker writes into a freed block of n
// bytes at a, given a live block of the same span (same), a live block of
// another span of the class (other), and a live block of another class.
func attackValues(goMem []byte, same, other, otherClass uintptr) []struct {
	name string
	v    uintptr
} {
	return []struct {
		name string
		v    uintptr
	}{
		{"Go address", addrOf(goMem)},
		{"wild address", wildAddress},
		{"live block of the span", same},
		{"block of another span", other},
		{"live block of another class", otherClass},
	}
}

// TestFreeListCorrupt frees many blocks, past the magazines and depots onto
// their spans, writes one attack value into one word (the link, the key's
// slot, or both) of every freed block, and allocates them all again.
func TestFreeListCorrupt(t *testing.T) {
	skipCheckedBuild(t)
	rounds := 3
	if testing.Short() {
		rounds = 1
	}
	sizes, wordSets := []int{8, 64, 4096}, []string{"link", "key", "both"}
	if raceEnabled { // every access checked: 64 B, the link
		sizes, wordSets = []int{64}, wordSets[:1]
	}
	goMem := make([]byte, 4096)
	for _, arm := range corruptArms {
		for _, n := range sizes {
			for _, words := range wordSets {
				if n == 8 && words != "link" {
					continue // one word: the link
				}
				for vi := range attackValues(nil, 0, 0, 0) {
					name := fmt.Sprintf("%s/%d/%s/%s", arm.name, n, words, attackValues(nil, 0, 0, 0)[vi].name)
					t.Run(name, func(t *testing.T) {
						for range rounds {
							corruptFlow(t, arm, n, words, vi, goMem)
						}
					})
				}
			}
		}
	}
	runtime.KeepAlive(goMem)
}

// corruptFlow is one round of TestFreeListCorrupt.
func corruptFlow(t *testing.T, arm corruptArm, n int, words string, vi int, goMem []byte) {
	al := newAllocator(t, arm)
	h := al.h
	c := sizeClass(n)
	per := int(classBlocks[c])
	// Past the magazines and depots (256 KiB a class): 512 KiB, on 8 spans
	// or more.
	least := max(8*per, (512<<10)/int(classSize[c]))
	count := max(min(40000, (16<<20)/int(classSize[c])), least)
	if testing.Short() || raceEnabled {
		count = max(min(10000, (4<<20)/int(classSize[c])), least)
	}
	live := map[uintptr]bool{}
	blocks := make([][]byte, count)
	for i := range blocks {
		blocks[i] = al.alloc(n, true)
	}
	// One block in every 97 stays live: in every span but the smallest
	// classes' a live block of the span.
	keep := func(i int) bool { return i%97 == 0 }
	otherClass := al.alloc(2*n+100, true)
	live[addrOf(otherClass)] = true
	for i, b := range blocks {
		if keep(i) {
			live[addrOf(b)] = true
			continue
		}
		al.free(b)
	}
	for i, b := range blocks {
		if keep(i) {
			continue
		}
		same := addrOf(blocks[i-i%97])
		other := addrOf(blocks[(i+count/2)%count-((i+count/2)%count)%97])
		v := attackValues(goMem, same, other, addrOf(otherClass))[vi].v
		w := (*[2]uintptr)(unsafe.Pointer(&b[0]))
		switch words {
		case "link":
			w[0] = v
		case "key":
			w[1] = v
		case "both":
			w[0], w[1] = v, v
		}
	}
	panics := 0
	for i := range count + count/8 {
		b, msg := al.tryAlloc(n, i%2 == 0)
		if msg != "" {
			if err := checkCorruptPanic(msg, n); err != nil {
				t.Fatal(err)
			}
			panics++
			continue
		}
		if err := checkHandedOut(h, b, n, live); err != nil {
			t.Fatal(err)
		}
		live[addrOf(b)] = true
	}
	if panics == 0 {
		t.Fatalf("%d Allocs over %d corrupt free blocks: no corruption reported", count+count/8, count-count/97)
	}
	// Every corrupt list was met and abandoned: the heap allocates on.
	for range 1000 {
		b, msg := al.tryAlloc(n, true)
		if msg != "" {
			t.Fatalf("after every corrupt list was abandoned: %s", msg)
		}
		if err := checkHandedOut(h, b, n, live); err != nil {
			t.Fatal(err)
		}
		live[addrOf(b)] = true
	}
	if corruptBytes(h) == 0 {
		t.Fatal("Stats.CorruptBytes is 0 after a corrupt list was abandoned")
	}
	checkWorks(t, al)
}

// TestFreeListCorruptDoubleFree: the double-free check walks a span's free
// list (freeState); a corrupt link there panics with the corruption, not a
// fault, and the heap works afterwards.
func TestFreeListCorruptDoubleFree(t *testing.T) {
	skipCheckedBuild(t)
	goMem := make([]byte, 64)
	for _, arm := range corruptArms {
		t.Run(arm.name, func(t *testing.T) {
			al := newAllocator(t, arm)
			h := al.h
			count := 40000
			blocks := make([][]byte, count)
			for i := range blocks {
				blocks[i] = al.alloc(64, true)
			}
			for i, b := range blocks {
				if i%97 != 0 { // a live block keeps each span
					al.free(b)
				}
			}
			// Freed last, the blocks at the end are on top of their
			// spans' lists, above the first blocks of their spans.
			spanOf := func(b []byte) uint64 {
				page, _ := h.pages.PageOf(addrOf(b))
				return *h.pages.Entry(page) >> 32
			}
			for _, b := range blocks[count/2:] {
				if spanOf(b) == spanOf(blocks[count/2-2]) {
					*(*uintptr)(unsafe.Pointer(&b[0])) = addrOf(goMem)
				}
			}
			var msg string
			func() {
				defer func() { msg = fmt.Sprint(recover()) }()
				al.free(blocks[count/2-2]) // the double free
			}()
			if err := checkCorruptPanic(msg, 64); err != nil {
				t.Fatal(err)
			}
			checkWorks(t, al)
		})
	}
	runtime.KeepAlive(goMem)
}

// TestFreeListPointerData: live data that looks like the heap's pointers
// (blocks full of live blocks' addresses, their neighbours', their own,
// freed blocks') never makes a report, freed or not.
func TestFreeListPointerData(t *testing.T) {
	for _, arm := range corruptArms {
		t.Run(arm.name, func(t *testing.T) {
			al := newAllocator(t, arm)
			for _, n := range []int{8, 16, 64, 1000, 4096, 40000} {
				const count = 3000
				blocks := make([][]byte, count)
				for round := range 4 {
					for i := range blocks {
						if blocks[i] == nil {
							b, msg := al.tryAlloc(n, round%2 == 0)
							if msg != "" {
								t.Fatalf("round %d: %s", round, msg)
							}
							blocks[i] = b
						}
					}
					for i, b := range blocks {
						a := addrOf(b)
						ws := unsafe.Slice((*uintptr)(unsafe.Pointer(&b[0])), len(b)/8)
						for j := range ws {
							switch j % 4 {
							case 0:
								ws[j] = addrOf(blocks[(i+j+1)%count])
							case 1:
								ws[j] = a + uintptr(len(b))
							case 2:
								ws[j] = a - uintptr(len(b))
							case 3:
								ws[j] = a
							}
						}
					}
					// Free every other block: the freed ones hold the
					// same words past the heap's own.
					for i := round % 2; i < count; i += 2 {
						al.free(blocks[i])
						blocks[i] = nil
					}
				}
				for i, b := range blocks {
					if b != nil {
						al.free(b)
						blocks[i] = nil
					}
				}
			}
			if cb := corruptBytes(al.h); cb != 0 {
				t.Fatalf("Stats.CorruptBytes = %d with no write after free", cb)
			}
			checkWorks(t, al)
		})
	}
}

// TestFreeListCorruptConcurrent: goroutines that meet corrupt lists at once,
// in every arm, each through its own Local in the Local arm. Every block
// they are handed is a block of the heap, and none goes to two of them.
func TestFreeListCorruptConcurrent(t *testing.T) {
	skipCheckedBuild(t)
	const workers, count = 4, 6000
	goMem := make([]byte, 64)
	for _, arm := range corruptArms {
		t.Run(arm.name, func(t *testing.T) {
			h := newTestHeap(t, unprofiled(arm.opts))
			als := make([]allocator, workers)
			for w := range als {
				als[w] = allocator{h: h}
				if arm.cache {
					als[w].c = h.NewLocal()
					defer als[w].c.Close()
				}
			}
			run := func(f func(w int) error) {
				errs := make(chan error, workers)
				for w := range workers {
					go func() { errs <- f(w) }()
				}
				for range workers {
					if err := <-errs; err != nil {
						t.Fatal(err)
					}
				}
			}
			blocks := make([][][]byte, workers)
			run(func(w int) error {
				for range count {
					blocks[w] = append(blocks[w], als[w].alloc(64, true))
				}
				return nil
			})
			run(func(w int) error {
				for i, b := range blocks[w] {
					if i%97 != 0 {
						als[w].free(b)
					}
				}
				return nil
			})
			live := map[uintptr]bool{}
			for w := range workers {
				for i, b := range blocks[w] {
					if i%97 == 0 {
						live[addrOf(b)] = true
					} else {
						*(*uintptr)(unsafe.Pointer(&b[0])) = addrOf(goMem)
					}
				}
			}
			got := make([][][]byte, workers)
			panics := make([]int, workers)
			run(func(w int) error {
				for range count {
					b, msg := als[w].tryAlloc(64, false)
					if msg != "" {
						if err := checkCorruptPanic(msg, 64); err != nil {
							return err
						}
						panics[w]++
						continue
					}
					got[w] = append(got[w], b)
				}
				return nil
			})
			total := 0
			for w := range workers {
				total += panics[w]
				for _, b := range got[w] {
					if err := checkHandedOut(h, b, 64, live); err != nil {
						t.Fatal(err)
					}
					live[addrOf(b)] = true
				}
			}
			if total == 0 {
				t.Fatal("no corruption reported")
			}
			checkWorks(t, allocator{h: h})
		})
	}
	runtime.KeepAlive(goMem)
}

// skipCheckedBuild skips a fast heap's corruption test in an offheapchecked
// build, where every heap is checked: the quarantine holds a freed block
// back and poisons it, a 64-byte block has a canary after it, and a write
// after free is reported with its stacks (checked_test.go) before any link
// is followed.
func skipCheckedBuild(t *testing.T) {
	t.Helper()
	if buildChecked {
		t.Skip("offheapchecked: every heap is checked, and its quarantine sees a write after free first")
	}
}

// wildAddress is an address that no heap maps. It is a variable, so that the
// tests compile on 32-bit targets (which CI vets), where it truncates.
var wildAddress = uintptr(wild64)

var wild64 uint64 = 0x7f0000001000
