package offheaptest_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/offheap/offheap"
	"github.com/offheap/offheap/offheaptest"
)

// reporter stands in for the *testing.T of a test, to show what the test
// would print: a test passes its own t.
type reporter struct {
	testing.TB
	cleanups []func()
}

func (r *reporter) Helper()           {}
func (r *reporter) Cleanup(fn func()) { r.cleanups = append(r.cleanups, fn) }
func (r *reporter) Errorf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	fmt.Println("FAIL:", strings.SplitN(msg, "\n", 2)[0])
}
func (r *reporter) end() {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
}

// A test makes its heap with New; a block it forgets to free fails it when
// it ends, with the stack that allocated the block.
func ExampleNew() {
	t := new(reporter) // in a test: the test's t

	h := offheaptest.New(t, offheap.Options{})
	keep := h.Alloc(64)
	h.Free(h.Alloc(100))
	_ = keep // the bug: never freed

	t.end() // in a test: its end
	// Output:
	// FAIL: offheaptest: the heap from offheaptest.New, at the test's end: offheap: leak: 1 block (64 bytes) still live at Close, allocated at 1 place
}

// VerifyNone checks a heap in the middle of a test; the heap stays usable.
func ExampleVerifyNone() {
	t := new(reporter) // in a test: the test's t

	h := offheaptest.New(t, offheap.Options{})
	b := h.Alloc(64)
	offheaptest.VerifyNone(t, h) // fails: b is live
	h.Free(b)
	offheaptest.VerifyNone(t, h) // passes

	t.end()
	// Output:
	// FAIL: offheaptest.VerifyNone: offheap: leak: 1 block (64 bytes) live, allocated at 1 place
}

// VerifyTestMain goes in a package's TestMain, in one of its _test.go files:
//
//	func TestMain(m *testing.M) {
//		offheaptest.VerifyTestMain(m)
//	}
//
// A heap the tests left open with a block live then fails the test binary,
// with a report on stderr like this one.
func ExampleVerifyTestMain() {
	h, err := offheap.NewHeap(offheap.Options{Checked: true}) // or any heap, under -tags offheapchecked
	if err != nil {
		fmt.Println(err)
		return
	}
	b := h.Alloc(64) // left live when the tests end

	if le := h.Leaks(); le != nil {
		fmt.Println(strings.SplitN(le.Error(), "\n", 2)[0])
	}
	h.Free(b)
	if err := h.Close(); err != nil {
		fmt.Println(err)
	}
	// Output:
	// offheap: leak: 1 block (64 bytes) live, allocated at 1 place
}
