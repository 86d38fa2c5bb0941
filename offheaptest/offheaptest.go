// Package offheaptest makes a test fail when it leaks off-heap memory or
// misuses it, in the manner of goleak: a test that writes
//
//	h := offheaptest.New(t, offheap.Options{})
//
// gets a checked heap (offheap.Options.Checked) that is closed when the test
// ends, and the test fails with every memory error the heap found (a double,
// invalid or foreign free, a write after free, an overrun, a use of a freed
// block's Ref) and every block still live, grouped by the stack that
// allocated it:
//
//	offheap: leak: 6 blocks (384 bytes) still live at Close, allocated at 1 place
//
//	6 blocks, 384 bytes, allocated at:
//	example.com/cache.(*Local).Put
//		/src/cache/cache.go:42
//	...
//	at 0x7f3a1c200000 (64 bytes), 0x7f3a1c200040 (64 bytes), 0x7f3a1c200080 (64 bytes), 0x7f3a1c2000c0 (64 bytes) and 2 more
//
// A MemoryError names its kind, the block's address and size, and the stacks
// of its allocation and free (and of the second Free of a double free).
//
// VerifyNone checks a heap in the middle of a test, and VerifyTestMain checks
// every checked heap that is still open when a package's tests end, the
// default heap (offheap.Default) included.
//
// Checked mode is a run-time option, so New's heaps are checked in every
// build. The heaps the code under test makes itself, and offheap.Default,
// are checked only when the tests are built with the offheapchecked tag,
// which makes every heap checked:
//
//	go test -tags offheapchecked ./...
//
// Without it, VerifyNone on a fast heap can count its live blocks
// (offheap.Stats) but cannot say where they were allocated, and
// VerifyTestMain does not see fast heaps at all.
package offheaptest

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/offheap/offheap"
	"github.com/offheap/offheap/internal/openheaps"
)

// New returns a new checked heap with opts (Checked set whatever opts
// says), which is closed when the test and its subtests end (tb.Cleanup).
// Then the test fails (tb.Errorf) once for every memory error the heap
// found, whether or not its panic was recovered, and once for its leaks:
// the blocks still live at Close, grouped by allocation stack (and an Arena
// not released, which has no stack: counted). A test that
// closes the heap itself fails the same way, whatever it does with Close's
// error. If the heap cannot be made, New fails the test at once
// (tb.Fatalf).
func New(tb testing.TB, opts offheap.Options) *offheap.Heap {
	tb.Helper()
	opts.Checked = true
	h, err := offheap.NewHeap(opts)
	if err != nil {
		tb.Fatalf("offheaptest: %v", err)
	}
	tb.Cleanup(func() {
		tb.Helper()
		err := h.Close() // nil if the test closed it
		for _, e := range problems(h, true) {
			tb.Errorf("offheaptest: the heap from offheaptest.New, at the test's end: %v", e)
		}
		// Whatever else Close failed at: giving memory back.
		for _, e := range unwrap(err) {
			var me *offheap.MemoryError
			var le *offheap.LeakError
			if !errors.As(e, &me) && !errors.As(e, &le) {
				tb.Errorf("offheaptest: the heap from offheaptest.New, at Close: %v", e)
			}
		}
	})
	return h
}

// VerifyNone fails the test now (tb.Errorf) if h has live blocks, once
// with them grouped by allocation stack, or has found memory errors, once
// for each. h stays open and usable. Call it where the test should hold no
// off-heap memory, with no Alloc or Free of h running: the list is exact
// then.
//
// A checked heap (offheaptest.New, offheap.Options.Checked, the
// offheapchecked build tag) knows where each block was allocated. A heap
// that is not checked does not: for one, VerifyNone fails with a count of
// its live blocks (offheap.Stats), and so it does for a checked heap's
// memory that has no allocation stack, an Arena not yet released.
func VerifyNone(tb testing.TB, h *offheap.Heap) {
	tb.Helper()
	for _, e := range problems(h, true) {
		tb.Errorf("offheaptest.VerifyNone: %v", e)
	}
}

// VerifyTestMain runs the tests (m.Run) and exits with their status, unless
// they passed and some checked heap that is still open (the default heap
// included, when it is checked) has live blocks or has found memory errors,
// or some sampled heap (Options.GuardOneIn) has found memory errors: then it
// prints them on stderr and exits with status 1. A sampled heap's live
// blocks are not reported: it is a fast heap, which the tests may keep
// open and in use to the end. Call it from TestMain:
//
//	func TestMain(m *testing.M) {
//		offheaptest.VerifyTestMain(m)
//	}
//
// Heaps closed before the tests end were checked by their Close (and, from
// New, by the test that made them). Only checked heaps are seen: build the
// tests with -tags offheapchecked to check them all.
func VerifyTestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if report := openReport(); report != "" {
			fmt.Fprint(os.Stderr, report)
			code = 1
		}
	}
	os.Exit(code)
}

// openReport describes the leaks and memory errors of every checked heap
// still open, or returns "" if none has any.
func openReport() string {
	open := openheaps.Checked()
	def := openheaps.Default()
	var b strings.Builder
	bad := 0
	for i, x := range open {
		errs := problems(x.Heap.(*offheap.Heap), !x.Sampled)
		if len(errs) == 0 {
			continue
		}
		bad++
		which := ""
		if x.Heap == def {
			which = ", offheap.Default()'s"
		}
		fmt.Fprintf(&b, "\nchecked heap %d of the %d still open%s:\n", i+1, len(open), which)
		for _, e := range errs {
			fmt.Fprintf(&b, "\n%v\n", e)
		}
	}
	if bad == 0 {
		return ""
	}
	return fmt.Sprintf("offheaptest.VerifyTestMain: the tests passed, but %d checked %s still open %s leaks or memory errors:\n%s",
		bad, plural(bad, "heap", "heaps"), plural(bad, "has", "have"), b.String())
}

// problems lists h's memory errors, oldest first, then, with leaks, its
// leaks: the live blocks by allocation stack, or when h knows of none, the
// count of those it has no stack for (Stats).
func problems(h *offheap.Heap, leaks bool) []error {
	var errs []error
	for _, e := range h.MemoryErrors() {
		errs = append(errs, e)
	}
	if !leaks {
		return errs
	}
	if le := h.Leaks(); le != nil {
		errs = append(errs, le)
	} else if s := h.Stats(); s.LiveBlocks > 0 {
		errs = append(errs, fmt.Errorf("offheap: leak: %d %s (%d %s) live that have no allocation stack: "+
			"an Arena not released, or blocks of a heap that is not checked (make it with offheaptest.New or "+
			"offheap.Options{Checked: true}, or build the tests with -tags offheapchecked, to see where they were allocated)",
			s.LiveBlocks, plural(int(s.LiveBlocks), "block", "blocks"), s.InUseBytes, plural(int(s.InUseBytes), "byte", "bytes")))
	}
	return errs
}

// unwrap lists the errors err joins, recursively; err itself if it joins
// none; nothing for nil.
func unwrap(err error) []error {
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		if err == nil {
			return nil
		}
		return []error{err}
	}
	var errs []error
	for _, e := range j.Unwrap() {
		errs = append(errs, unwrap(e)...)
	}
	return errs
}

// plural is one when n is 1, else many.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
