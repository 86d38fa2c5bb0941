package offheap_test

import (
	"errors"
	"fmt"

	"github.com/offheap/offheap"
)

// A program that uses the process-wide heap sets its options once, before
// anything uses it: here a limit of 256 MiB.
func ExampleSetDefaultOptions() {
	// In main or an init function:
	if err := offheap.SetDefaultOptions(offheap.Options{Limit: 256 << 20}); err != nil {
		panic(err)
	}

	h := offheap.Default()
	b := h.Alloc(100)
	fmt.Println(len(b))
	h.Free(b)
	_, err := h.TryAlloc(512 << 20)
	fmt.Println(errors.Is(err, offheap.ErrLimit))
	// Output:
	// 100
	// true
}
