package offheap

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"testing"

	"github.com/offheap/offheap/internal/osmem"
)

// TestMain runs the tests where offheap has a memory backend. Elsewhere the
// one thing to test is NewHeap's error, which must say so and wrap
// errors.ErrUnsupported (compile the tests there with, for example,
// GOOS=darwin go vet ./...).
func TestMain(m *testing.M) {
	if !osmem.Supported {
		_, err := NewHeap(Options{})
		if !errors.Is(err, errors.ErrUnsupported) {
			fmt.Fprintf(os.Stderr, "NewHeap on %s/%s: %v, want an error wrapping errors.ErrUnsupported\n", runtime.GOOS, runtime.GOARCH, err)
			os.Exit(1)
		}
		fmt.Printf("no backend on %s/%s, as NewHeap says (%v): nothing more to test\n", runtime.GOOS, runtime.GOARCH, err)
		os.Exit(0)
	}
	os.Exit(m.Run())
}
