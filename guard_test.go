package offheap

import (
	"errors"
	"os"
	"os/exec"
	"runtime/debug"
	"strings"
	"testing"
	"unsafe"

	"github.com/offheap/offheap/internal/pageheap"
)

// childEnv names the bug a re-executed test binary runs; the parent demands
// the crash.
const childEnv = "OFFHEAP_GUARD_CHILD"

// guardChild is the body of TestGuardFaults in a child process: it runs the
// program named by mode, with or without its bug, and prints "survived" if
// it gets to the end.
func guardChild(mode string) {
	h, err := NewHeap(Options{Checked: true, GuardPages: true})
	if err != nil {
		panic(err)
	}
	b := h.Alloc(64)
	b[0] = 1
	p := unsafe.SliceData(b)
	var sink byte
	switch mode {
	case "read-after-free":
		h.Free(b)
		sink = *p // the bug
	case "read-after-free-control":
		sink = *p
		h.Free(b)
	case "write-past-end":
		*(*byte)(unsafe.Add(unsafe.Pointer(p), 64)) = 1 // the bug: 64-byte block, guard page right after
	case "write-past-end-control":
		*(*byte)(unsafe.Add(unsafe.Pointer(p), 63)) = 1
		h.Free(b)
	}
	os.Stdout.WriteString("survived " + string('0'+sink%10) + "\n")
	os.Exit(0)
}

// runChild re-executes this test binary to run mode in guardChild.
func runChild(t *testing.T, mode string) (string, error) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestGuardFaults$", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"="+mode)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestGuardFaults shows that with GuardPages a read after free and a write
// past the end crash the process at once, with a fault.
func TestGuardFaults(t *testing.T) {
	if mode := os.Getenv(childEnv); mode != "" {
		guardChild(mode)
		return
	}
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	skipRace(t, "guard pages do not fault: the heap is Go memory, which is never made inaccessible")
	for _, bug := range []string{"read-after-free", "write-past-end"} {
		out, err := runChild(t, bug)
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() == 0 {
			t.Errorf("%s: exit %v, want a crash; output:\n%s", bug, err, out)
			continue
		}
		if !strings.Contains(out, "unexpected fault address") && !strings.Contains(out, "SIGSEGV") {
			t.Errorf("%s: no fault in the output:\n%s", bug, out)
		}
		// Control: the same program without the bug.
		out, err = runChild(t, bug+"-control")
		if err != nil || !strings.Contains(out, "survived") {
			t.Errorf("%s control: %v\n%s", bug, err, out)
		}
	}
}

// faultAddr runs f with faults turned into panics and returns the faulting
// address, or false if f did not fault.
func faultAddr(f func()) (addr uintptr, faulted bool) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			if e, ok := r.(interface{ Addr() uintptr }); ok {
				addr, faulted = e.Addr(), true
				return
			}
			panic(r)
		}
	}()
	f()
	return 0, false
}

// sinkByte keeps the loads of the fault tests from being optimized away.
var sinkByte byte

// TestGuardLookup recovers a fault in process and names the block.
func TestGuardLookup(t *testing.T) {
	skipRace(t, "guard pages do not fault: the heap is Go memory, which is never made inaccessible")
	h := checkedHeap(t, Options{GuardPages: true})
	b := h.Alloc(100)
	p := unsafe.SliceData(b)
	if _, faulted := faultAddr(func() { sinkByte = *p }); faulted {
		t.Fatal("control: reading a live guarded block faulted")
	}
	h.Free(b)
	addr, faulted := faultAddr(func() { sinkByte = *(*byte)(unsafe.Add(unsafe.Pointer(p), 10)) })
	if !faulted {
		t.Fatal("read after free did not fault")
	}
	info, ok := h.Lookup(addr)
	if !ok || info.Start != addrOf(b) || info.Size != 100 || !info.Freed || !info.Guarded {
		t.Fatalf("Lookup(%#x) = %+v, %v", addr, info, ok)
	}
	wantStack(t, "alloc", info.AllocStack, "TestGuardLookup")
	wantStack(t, "free", info.FreeStack, "TestGuardLookup")

	// Past the end of a live block: the guard page, which Lookup also
	// attributes to the block.
	c := h.Alloc(32)
	addr, faulted = faultAddr(func() { sinkByte = *(*byte)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(c)), 32)) })
	if info, ok := h.Lookup(addr); !faulted || !ok || info.Start != addrOf(c) || info.Freed {
		t.Fatalf("overrun: faulted %v, Lookup(%#x) = %+v, %v", faulted, addr, info, ok)
	}
	h.Free(c)
}

// TestGuardSpareRuns follows a one-page guarded run through the spares: it
// stays inaccessible after it leaves the quarantine, the next guarded block
// gets it zeroed with its guard page still in place, and Trim gives it back.
func TestGuardSpareRuns(t *testing.T) {
	skipRace(t, "guard pages do not fault: the heap is Go memory, which is never made inaccessible")
	withQuarantine(t, 1, 1<<20) // a quarantine of one block
	h := checkedHeap(t, Options{GuardPages: true})
	b1 := h.Alloc(100)
	for i := range b1 {
		b1[i] = 0xff
	}
	p1 := unsafe.SliceData(b1)
	h.Free(b1)
	h.Free(h.Alloc(200)) // pushes b1 out of the quarantine, into the spares
	if n := len(h.chk.spareRuns); n != 1 {
		t.Fatalf("%d spare runs, want 1", n)
	}
	if _, faulted := faultAddr(func() { sinkByte = *p1 }); !faulted {
		t.Fatal("reading a spare run did not fault")
	}

	b3 := h.Alloc(300)
	if guardBase(addrOf(b3)) != guardBase(addrOf(b1)) {
		t.Fatalf("Alloc(300) at %#x did not reuse the spare run of %#x", addrOf(b3), addrOf(b1))
	}
	for i, x := range b3 {
		if x != 0 {
			t.Fatalf("Alloc(300) on a spare run: byte %d is %#x, not zero", i, x)
		}
		b3[i] = 1
	}
	end := unsafe.Add(unsafe.Pointer(unsafe.SliceData(b3)), 304) // 300 rounded up to 16: the guard page
	if _, faulted := faultAddr(func() { sinkByte = *(*byte)(end) }); !faulted {
		t.Fatal("reading past a block on a spare run did not fault: no guard page")
	}
	h.Free(b3)

	h.Trim()
	if n := len(h.chk.spareRuns); n != 0 {
		t.Fatalf("Trim left %d spare runs", n)
	}
	if s := h.Stats(); s.Allocs != 3 || s.Frees != 3 || s.InUseBytes != 0 {
		t.Fatalf("Stats after Trim: Allocs %d, Frees %d, InUseBytes %d", s.Allocs, s.Frees, s.InUseBytes)
	}
	closeClean(t, h)
}

func TestGuardPagesBasics(t *testing.T) {
	withQuarantine(t, 4, 1<<20)
	h := checkedHeap(t, Options{GuardPages: true})
	for _, n := range []int{1, 15, 16, 17, 4000, pageSize, pageSize + 1, 100_000} {
		b := h.Alloc(n)
		a := addrOf(b)
		if a%16 != 0 || (a+uintptr(n)+15)&^15&(pageSize-1) != 0 {
			t.Fatalf("Alloc(%d) at %#x: not 16-aligned and flush with its page end", n, a)
		}
		for i := range b {
			if b[i] != 0 {
				t.Fatalf("Alloc(%d) not zeroed", n)
			}
			b[i] = 0xff
		}
		if info, ok := h.Lookup(a); !ok || !info.Guarded {
			t.Fatalf("Lookup: %+v %v", info, ok)
		}
		if n > 1 {
			if me := memoryError(t, func() { h.Free(b[1:]) }); me.Kind != InvalidFree {
				t.Fatalf("Free(b[1:]): %v", me)
			}
		}
		h.Free(b)
		if me := memoryError(t, func() { h.Free(b) }); me.Kind != DoubleFree {
			t.Fatalf("double free: %v", me)
		}
		// Refused before Realloc reads the block's inaccessible page,
		// which faulted in its copy before the fix.
		if me := memoryError(t, func() { h.Realloc(b, n+1) }); me.Kind != DoubleFree {
			t.Fatalf("Realloc of a freed block: %v", me)
		}
	}
	s := h.Stats()
	if s.Allocs != 8 || s.Large != 8 || s.Frees != 8 || s.InUseBytes != 0 {
		t.Fatalf("Stats %+v", s)
	}
	closeClean(t, h)
}

func TestSampleRate(t *testing.T) {
	if buildChecked {
		t.Skip("checked mode samples through its own counter")
	}
	// GuardOneIn 1: every allocation on guard pages, in a heap with
	// magazines.
	h := newTestHeap(t, Options{GuardOneIn: 1})
	if !h.mags.on {
		t.Fatal("a sampled heap lost its magazines")
	}
	for _, n := range []int{64, 64, 64, 100_000, 64, 64} {
		b := h.Alloc(n)
		if info, ok := h.Lookup(addrOf(b)); !ok || !info.Guarded {
			t.Fatalf("GuardOneIn 1: Alloc(%d) not guarded: %+v %v", n, info, ok)
		}
		h.Free(b)
		if me := memoryError(t, func() { h.Free(b) }); me.Kind != DoubleFree {
			t.Fatalf("double free of a sampled block: %v", me)
		}
		// Realloc reads the block it moves, and a freed sample's page is
		// inaccessible: Free refuses it first, as a double free. Before,
		// this Realloc faulted in its copy.
		for _, m := range []int{10, 2 * n} {
			if me := memoryError(t, func() { h.Realloc(b, m) }); me.Kind != DoubleFree {
				t.Fatalf("Realloc of a freed sampled block to %d bytes: %v", m, me)
			}
		}
	}

	// GuardOneIn 100: about one in a hundred, and the others are ordinary
	// fast-path blocks. The intervals are uniform in [1, 199], so 20000
	// allocations give 200 samples, give or take about 12.
	h = newTestHeap(t, Options{GuardOneIn: 100})
	sampled := 0
	var live [][]byte
	for i := range 20000 {
		b := h.Alloc(64)
		// In any region: with 64 KiB OS pages the pool alone fills a race
		// build's first region.
		if page, _ := h.pages.PageOf(addrOf(b)); uint8(*h.pages.Entry(page)) == pageheap.ClassGuarded {
			sampled++
		}
		live = append(live, b)
		if i%4 != 3 { // a few live per class
			for _, b := range live {
				h.Free(b)
			}
			live = live[:0]
		}
	}
	for _, b := range live {
		h.Free(b)
	}
	if sampled < 120 || sampled > 300 {
		t.Fatalf("GuardOneIn 100: %d of 20000 sampled", sampled)
	}
	s := h.Stats()
	if s.Allocs != 20000 || s.Frees != 20000 || s.InUseBytes != 0 || s.MagazineHits == 0 ||
		s.MagazineHits+s.LocalHits+s.CentralHits+s.Fresh+s.Large != s.Allocs {
		t.Fatalf("Stats %+v", s)
	}
	closeClean(t, h)

	// A leaked sampled block is reported; unsampled ones are not known.
	h = newTestHeap(t, Options{GuardOneIn: 1})
	h.Alloc(10)
	var le *LeakError
	if err := h.Close(); !errors.As(err, &le) || len(le.Leaks) != 1 || le.Leaks[0].Size != 10 {
		t.Fatalf("Close: %v", err)
	}
}

// TestGuardPool: a sampled heap maps its pool of guarded runs when it is
// made, all inaccessible and none counted as in use; its samples take the
// pool's runs, freed longest ago first, with a guard page after the block;
// a freed block's run stays inaccessible, and its record says who
// allocated and freed it (Lookup, a second Free), until the run is taken
// again; samples beyond the pool take runs of their own; Trim keeps the
// pool, and the census pairs every sample's Alloc and Free.
func TestGuardPool(t *testing.T) {
	if buildChecked {
		t.Skip("every heap is checked under the offheapchecked tag: a checked heap has no pool")
	}
	skipRace(t, "guard pages do not fault: the heap is Go memory, which is never made inaccessible")
	h := newTestHeap(t, Options{GuardOneIn: 1, ProfileBytes: -1})
	c := h.chk
	p := &c.pool
	if p.n != poolSlots || p.end-p.base != poolSlots*2*pageheap.OSPageBytes {
		t.Fatalf("a new sampled heap: %d free runs in the pool [%#x, %#x); want %d runs of two OS pages", p.n, p.base, p.end, poolSlots)
	}
	if _, faulted := faultAddr(func() { sinkByte = *(*byte)(ptr(p.base)) }); !faulted {
		t.Fatal("reading the pool did not fault")
	}
	if s := h.Stats(); s.Allocs != 0 || s.InUseBytes != 0 {
		t.Fatalf("a new sampled heap counts its pool: Allocs %d, InUseBytes %d", s.Allocs, s.InUseBytes)
	}

	// The first block is freed, then the pool's other runs are taken: the
	// freed run is the last the pool hands out.
	first := h.Alloc(100)
	firstRun := guardBase(addrOf(first))
	if !c.inPool(firstRun) {
		t.Fatalf("the first sample at %#x is not on the pool", addrOf(first))
	}
	end := unsafe.Add(unsafe.Pointer(unsafe.SliceData(first)), 112) // 100 rounded up to 16: the guard page
	if _, faulted := faultAddr(func() { sinkByte = *(*byte)(end) }); !faulted {
		t.Fatal("reading past a block on the pool did not fault: no guard page")
	}
	h.Free(first)
	addr, faulted := faultAddr(func() { sinkByte = *unsafe.SliceData(first) })
	if info, ok := h.Lookup(addr); !faulted || !ok || !info.Freed || info.Start != addrOf(first) {
		t.Fatalf("a freed block on the pool: faulted %v, Lookup = %+v, %v", faulted, info, ok)
	}
	if me := memoryError(t, func() { h.Free(first) }); me.Kind != DoubleFree {
		t.Fatalf("a second Free of a block on the pool: %v", me)
	}
	var blocks [][]byte
	for i := range 3 * poolSlots { // more than the pool: the rest take runs of their own
		b := h.Alloc(100)
		b[99] = 1
		blocks = append(blocks, b)
		run := guardBase(addrOf(b))
		if onPool := c.inPool(run); onPool != (i < poolSlots) || (run == firstRun) != (i == poolSlots-1) {
			t.Fatalf("sample %d at %#x: on the pool %v, the first sample's run %v", i, addrOf(b), onPool, run == firstRun)
		}
	}
	for _, b := range blocks {
		h.Free(b)
	}
	h.Trim()
	if p.n != poolSlots {
		t.Fatalf("after Trim: %d free runs in the pool, want %d", p.n, poolSlots)
	}
	if s := h.Stats(); s.Allocs != 1+3*poolSlots || s.Frees != 1+3*poolSlots || s.InUseBytes != 0 {
		t.Fatalf("Stats after Trim: Allocs %d, Frees %d, InUseBytes %d", s.Allocs, s.Frees, s.InUseBytes)
	}
	closeClean(t, h)
}

// faultError runs f with faults turned into panics and returns what
// FaultError makes of the value recovered, and whether f panicked.
func faultError(f func()) (me *MemoryError, panicked bool) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		r := recover()
		me, panicked = FaultError(r), r != nil
	}()
	f()
	return nil, false
}

// readAt reads the byte at p: the access a fault test makes, in a function
// of its own, so that the stack of the access names it.
//
//go:noinline
func readAt(p unsafe.Pointer) { sinkByte = *(*byte)(p) }

// TestFaultError: a fault on a guarded block, recovered under
// SetPanicOnFault, becomes a *MemoryError with the block's allocation and
// free stacks and the stack of the access, in a checked heap with guard
// pages and in a sampled one, and is kept with the heap's MemoryErrors; a
// panic that is no fault, or a fault elsewhere, becomes nil.
func TestFaultError(t *testing.T) {
	skipRace(t, "guard pages do not fault: the heap is Go memory, which is never made inaccessible")
	for _, opts := range []Options{{GuardPages: true}, {GuardOneIn: 1}} {
		h := checkedHeap(t, opts)
		b := h.Alloc(100)
		h.Free(b)
		me, _ := faultError(func() { readAt(unsafe.Add(unsafe.Pointer(unsafe.SliceData(b)), 10)) })
		if me == nil || me.Kind != UseAfterFree || me.Addr != addrOf(b)+10 || me.Size != 100 {
			t.Fatalf("%+v: read after free: %v", opts, me)
		}
		wantStack(t, "alloc", me.AllocStack, "TestFaultError")
		wantStack(t, "free", me.FreeStack, "TestFaultError")
		if first, _, _ := strings.Cut(me.AgainStack, "\n"); !strings.HasSuffix(first, ".readAt") {
			t.Fatalf("%+v: the access's stack starts at %q:\n%s", opts, first, me.AgainStack)
		}
		if msg := me.Error(); !strings.Contains(msg, "offheap: use after free of") || !strings.Contains(msg, "\nfaulted at:\n") {
			t.Fatalf("%+v: %s", opts, msg)
		}

		c := h.Alloc(32)
		me, _ = faultError(func() { readAt(unsafe.Add(unsafe.Pointer(unsafe.SliceData(c)), 40)) })
		if me == nil || me.Kind != OutOfBounds || me.Addr != addrOf(c)+40 || me.FreeStack != "" ||
			!strings.Contains(me.Error(), "an access 8 bytes past the end") {
			t.Fatalf("%+v: overrun: %v", opts, me)
		}
		wantStack(t, "alloc", me.AllocStack, "TestFaultError")
		h.Free(c)
		if n := len(h.MemoryErrors()); n != 2 {
			t.Fatalf("%+v: %d MemoryErrors, want the 2 faults", opts, n)
		}

		// Controls: no fault, another panic, a fault on no heap's block.
		d := h.Alloc(8)
		if me, panicked := faultError(func() { readAt(unsafe.Pointer(unsafe.SliceData(d))) }); me != nil || panicked {
			t.Fatalf("%+v: a read of a live block: %v %v", opts, me, panicked)
		}
		h.Free(d)
		if me, panicked := faultError(func() { panic(errors.New("not a fault")) }); me != nil || !panicked {
			t.Fatalf("%+v: a plain panic: %v %v", opts, me, panicked)
		}
		if me, panicked := faultError(func() { readAt(nil) }); me != nil || !panicked {
			t.Fatalf("%+v: a nil dereference: %v %v", opts, me, panicked)
		}
	}
}

// TestGuardPoolLimit: a sampled heap makes no pool that would take more
// than an eighth of its Limit, since the pool's pages count as mapped (with
// 64 KiB OS pages a pool is 4 MiB); a larger Limit gets its pool.
func TestGuardPoolLimit(t *testing.T) {
	if buildChecked {
		t.Skip("every heap is checked under the offheapchecked tag: a checked heap has no pool")
	}
	pool := int64(poolSlots*slotPages) << pageShift
	for _, limit := range []int64{4 * pool, 8 * pool} {
		h := newTestHeap(t, Options{GuardOneIn: 1, ProfileBytes: -1, Limit: limit})
		if got, want := h.chk.pool.n, map[bool]int{true: poolSlots}[limit >= 8*pool]; got != want {
			t.Errorf("a sampled heap with a Limit of %d bytes, a pool of %d: %d runs in the pool, want %d", limit, pool, got, want)
		}
		h.Close()
	}
}
