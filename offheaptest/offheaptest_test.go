package offheaptest_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/offheap/offheap"
	"github.com/offheap/offheap/offheaptest"
)

// The package's own tests run under VerifyTestMain: no test may leave a
// checked heap open with leaks or errors.
func TestMain(m *testing.M) {
	if child := os.Getenv(childEnv); child != "" {
		childMain(child)
	}
	offheaptest.VerifyTestMain(m)
}

// fakeTB is a testing.TB that records what the helpers do with it: the
// failures, and the cleanups, which cleanup runs as the test's end would.
type fakeTB struct {
	testing.TB // nil: a method not written here panics
	errors     []string
	fatal      bool
	cleanups   []func()
}

func (f *fakeTB) Helper()           {}
func (f *fakeTB) Cleanup(fn func()) { f.cleanups = append(f.cleanups, fn) }
func (f *fakeTB) Errorf(format string, args ...any) {
	f.errors = append(f.errors, fmt.Sprintf(format, args...))
}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.fatal = true
	f.Errorf(format, args...)
}

// end runs the cleanups, last registered first, as testing does at the
// test's end, and returns the failures.
func (f *fakeTB) end() []string {
	for i := len(f.cleanups) - 1; i >= 0; i-- {
		f.cleanups[i]()
	}
	f.cleanups = nil
	return f.errors
}

// leakSix and leakOne leak blocks from two places, for the grouping.
func leakSix(h *offheap.Heap) {
	for range 6 {
		h.Alloc(64)
	}
}

func leakOne(h *offheap.Heap) { h.Alloc(100) }

// checkGrouped checks that msg is the grouped report of leakSix's and
// leakOne's blocks: the counts, each stack once, the larger group first,
// and the addresses.
func checkGrouped(t *testing.T, msg, when string) {
	t.Helper()
	for _, want := range []string{
		"offheap: leak: 7 blocks (484 bytes) " + when + ", allocated at 2 places",
		"\n\n6 blocks, 384 bytes, allocated at:\n",
		"\n\n1 block, 100 bytes, allocated at:\n",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("the report lacks %q:\n%s", want, msg)
		}
	}
	if n := strings.Count(msg, "offheaptest_test.leakSix"); n != 1 {
		t.Errorf("leakSix's stack printed %d times, want once:\n%s", n, msg)
	}
	if six, one := strings.Index(msg, "leakSix"), strings.Index(msg, "leakOne"); six < 0 || one < 0 || six > one {
		t.Errorf("want leakSix's group, the larger, before leakOne's:\n%s", msg)
	}
	if !regexp.MustCompile(`\nat 0x[0-9a-f]+ \(64 bytes\), 0x[0-9a-f]+ \(64 bytes\), 0x[0-9a-f]+ \(64 bytes\), 0x[0-9a-f]+ \(64 bytes\) and 2 more`).MatchString(msg) {
		t.Errorf("want the first 4 of leakSix's addresses and the count of the rest:\n%s", msg)
	}
}

// TestNewLeak: a leak under New fails the test, once, with the leaks
// grouped by allocation stack.
func TestNewLeak(t *testing.T) {
	var f fakeTB
	h := offheaptest.New(&f, offheap.Options{})
	leakSix(h)
	leakOne(h)
	h.Free(h.Alloc(10)) // not a leak
	errs := f.end()
	if len(errs) != 1 {
		t.Fatalf("%d failures, want 1: %q", len(errs), errs)
	}
	checkGrouped(t, errs[0], "still live at Close")
}

// TestNewClosedByTest: a test that closes New's heap itself and drops
// Close's error still fails.
func TestNewClosedByTest(t *testing.T) {
	var f fakeTB
	h := offheaptest.New(&f, offheap.Options{})
	leakSix(h)
	leakOne(h)
	h.Close() // the error dropped, as defer h.Close() drops it
	errs := f.end()
	if len(errs) != 1 {
		t.Fatalf("%d failures, want 1: %q", len(errs), errs)
	}
	checkGrouped(t, errs[0], "still live at Close")
}

// writeAfterFree writes to a block after freeing it.
func writeAfterFree(h *offheap.Heap) {
	b := h.Alloc(64)
	h.Free(b)
	b[3] = 1 // the bug
}

// TestNewWriteAfterFree: a write after free under New fails the test with
// the kind, the address, the size and both stacks.
func TestNewWriteAfterFree(t *testing.T) {
	var f fakeTB
	h := offheaptest.New(&f, offheap.Options{})
	writeAfterFree(h)
	errs := f.end()
	if len(errs) != 1 {
		t.Fatalf("%d failures, want 1: %q", len(errs), errs)
	}
	re := regexp.MustCompile(`offheap: write after free of 0x[0-9a-f]+ \(64 bytes\): byte 3 of the freed block was overwritten` +
		`(?s:.*)allocated at:\n[^\n]*offheaptest_test.writeAfterFree(?s:.*)first freed at:\n[^\n]*offheaptest_test.writeAfterFree`)
	if !re.MatchString(errs[0]) {
		t.Errorf("want a write after free with both stacks, got:\n%s", errs[0])
	}
}

// TestNewRecoveredDoubleFree: a double free whose panic the program
// recovered still fails the test.
func TestNewRecoveredDoubleFree(t *testing.T) {
	var f fakeTB
	h := offheaptest.New(&f, offheap.Options{})
	b := h.Alloc(32)
	h.Free(b)
	func() {
		defer func() { _ = recover() }() // a server that recovers every panic
		h.Free(b)
	}()
	errs := f.end()
	if len(errs) != 1 || !regexp.MustCompile(`offheap: double free of 0x[0-9a-f]+ \(32 bytes\)(?s:.*)allocated at:(?s:.*)first freed at:(?s:.*)freed again at:`).MatchString(errs[0]) {
		t.Errorf("want one failure, a double free with three stacks, got %q", errs)
	}
}

// TestNewArenaNotReleased: an Arena not released fails the test, counted
// (an arena's memory has no allocation stack).
func TestNewArenaNotReleased(t *testing.T) {
	var f fakeTB
	h := offheaptest.New(&f, offheap.Options{})
	h.NewArena().Alloc(10)
	released := h.NewArena()
	released.Alloc(10)
	released.Release()
	errs := f.end()
	if len(errs) != 1 || !strings.Contains(errs[0], "live that have no allocation stack: an Arena not released") {
		t.Errorf("want one failure for the arena, got %q", errs)
	}
}

// checkedBuild reports whether every heap is checked (the offheapchecked
// build tag): whether a heap made without Checked knows its leaks.
func checkedBuild(t *testing.T) bool {
	h, err := offheap.NewHeap(offheap.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	b := h.Alloc(1)
	defer h.Free(b)
	return h.Leaks() != nil
}

// TestVerifyNoneOneBlock: the count of one live block without a stack is
// "1 block".
func TestVerifyNoneOneBlock(t *testing.T) {
	h, err := offheap.NewHeap(offheap.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	var f fakeTB
	b := h.Alloc(1)
	offheaptest.VerifyNone(&f, h)
	h.Free(b)
	if errs := f.end(); len(errs) != 1 || !strings.Contains(errs[0], "offheap: leak: 1 block (") {
		t.Errorf("want one failure counting 1 block, got %q", errs)
	}
}

// TestNewClean: a test that frees what it allocates passes.
func TestNewClean(t *testing.T) {
	var f fakeTB
	h := offheaptest.New(&f, offheap.Options{})
	bs := make([][]byte, 100)
	for i := range bs {
		bs[i] = h.Alloc(i + 1)
	}
	for _, b := range bs {
		h.Free(b)
	}
	big := h.Alloc(1 << 20)
	h.Free(big)
	if errs := f.end(); len(errs) != 0 || f.fatal {
		t.Errorf("failures: %q", errs)
	}
}

// TestVerifyNone: live blocks fail the test now, grouped, and the heap
// stays usable; once they are freed, VerifyNone passes.
func TestVerifyNone(t *testing.T) {
	h, err := offheap.NewHeap(offheap.Options{Checked: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := h.Close(); err != nil {
			t.Error(err)
		}
	}()
	var f fakeTB
	offheaptest.VerifyNone(&f, h)
	if len(f.errors) != 0 {
		t.Fatalf("an empty heap: %q", f.errors)
	}
	var six [6][]byte
	for i := range six {
		six[i] = h.Alloc(64)
	}
	one := h.Alloc(100)
	offheaptest.VerifyNone(&f, h)
	if len(f.errors) != 1 || !strings.Contains(f.errors[0], "offheap: leak: 7 blocks (484 bytes) live, allocated at 2 places") ||
		!strings.Contains(f.errors[0], "6 blocks, 384 bytes, allocated at:\ngithub.com/offheap/offheap/offheaptest_test.TestVerifyNone") {
		t.Fatalf("want one failure with the grouped leaks, got %q", f.errors)
	}
	for _, b := range six {
		h.Free(b)
	}
	h.Free(one)
	f.errors = nil
	offheaptest.VerifyNone(&f, h)
	if len(f.errors) != 0 {
		t.Errorf("all freed: %q", f.errors)
	}
}

// TestVerifyNoneFastHeap: a heap that is not checked has no stacks, and
// VerifyNone counts its live blocks.
func TestVerifyNoneFastHeap(t *testing.T) {
	h, err := offheap.NewHeap(offheap.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b := h.Alloc(64)
	var f fakeTB
	offheaptest.VerifyNone(&f, h)
	h.Free(b)
	if err := h.Close(); err != nil {
		t.Error(err)
	}
	// Under -tags offheapchecked every heap is checked, and the report has
	// the stack.
	if len(f.errors) != 1 || !strings.Contains(f.errors[0], "offheap: leak: 1 block") {
		t.Errorf("want one failure for the live block, got %q", f.errors)
	}
}

// childEnv names what TestMain's child does instead of the tests.
const childEnv = "OFFHEAPTEST_CHILD"

// open is the heap a child leaves open.
var open *offheap.Heap

// childMain sets up what the child's test run leaves behind: a leak, a
// recovered double free, or nothing wrong in a heap left open; the tests
// then run under VerifyTestMain as usual.
func childMain(what string) {
	var err error
	if what == "sampled" {
		// A fast heap that samples: open and in use when the tests end.
		if open, err = offheap.NewHeap(offheap.Options{GuardOneIn: 1}); err != nil {
			panic(err)
		}
		childLeak(open)
		return
	}
	if open, err = offheap.NewHeap(offheap.Options{Checked: true}); err != nil {
		panic(err)
	}
	switch what {
	case "leak":
		childLeak(open)
	case "double-free":
		b := open.Alloc(48)
		open.Free(b)
		func() {
			defer func() { _ = recover() }()
			open.Free(b)
		}()
	case "clean":
		open.Free(open.Alloc(48))
	case "default-leak":
		open.Free(open.Alloc(48))
		if err := offheap.SetDefaultOptions(offheap.Options{Checked: true}); err != nil {
			panic(err)
		}
		childLeak(offheap.Default())
	}
}

func childLeak(h *offheap.Heap) {
	for range 3 {
		h.Alloc(32)
	}
}

// TestVerifyTestMain runs this test binary in a child process whose heap
// is left open with a leak, a recovered double free, or nothing wrong, and
// checks VerifyTestMain's exit status and report.
func TestVerifyTestMain(t *testing.T) {
	if os.Getenv(childEnv) != "" {
		return // the child's test passes: VerifyTestMain has the last word
	}
	for _, c := range []struct {
		what string
		code int
		want []string
	}{
		{"leak", 1, []string{
			"offheaptest.VerifyTestMain: the tests passed, but 1 checked heap still open has leaks or memory errors:",
			"offheap: leak: 3 blocks (96 bytes) live, allocated at 1 place",
			"3 blocks, 96 bytes, allocated at:\ngithub.com/offheap/offheap/offheaptest_test.childLeak",
		}},
		{"double-free", 1, []string{
			"offheaptest.VerifyTestMain: the tests passed, but 1 checked heap still open has leaks or memory errors:",
			"offheap: double free of 0x",
			"freed again at:\ngithub.com/offheap/offheap/offheaptest_test.childMain",
		}},
		{"default-leak", 1, []string{
			"offheaptest.VerifyTestMain: the tests passed, but 1 checked heap still open has leaks or memory errors:",
			"checked heap 2 of the 2 still open, offheap.Default()'s:",
			"3 blocks, 96 bytes, allocated at:\ngithub.com/offheap/offheap/offheaptest_test.childLeak",
		}},
		{"clean", 0, nil},
		{"sampled", 0, nil},
	} {
		t.Run(c.what, func(t *testing.T) {
			if c.what == "sampled" && checkedBuild(t) {
				t.Skip("the offheapchecked build tag checks every heap, a sampled one's live blocks included")
			}
			cmd := exec.Command(os.Args[0], "-test.run", "^TestVerifyTestMain$")
			cmd.Env = append(os.Environ(), childEnv+"="+c.what)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			err := cmd.Run()
			code := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != c.code {
				t.Errorf("exit status %d, want %d; stderr:\n%s", code, c.code, stderr.String())
			}
			for _, w := range c.want {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr.String())
				}
			}
			if c.code == 0 && stderr.Len() != 0 {
				t.Errorf("stderr: %s", stderr.String())
			}
		})
	}
}
