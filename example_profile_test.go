package offheap_test

import (
	"fmt"
	"os"

	"github.com/offheap/offheap"
)

// WriteProfile writes the heap's sampled allocation profile to a file that
// go tool pprof reads: go tool pprof -top -lines names the lines whose
// blocks are still live. A server serves the profile with the offheappprof
// package instead.
func ExampleHeap_WriteProfile() {
	h, err := offheap.NewHeap(offheap.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer h.Close()
	for range 100 {
		h.Alloc(64 << 10) // never freed: the profile names this line
	}

	f, err := os.CreateTemp("", "offheap-*.pb.gz")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.Remove(f.Name())
	if err := h.WriteProfile(f); err != nil {
		fmt.Println(err)
		return
	}
	if err := f.Close(); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("then: go tool pprof -top -lines", "offheap.pb.gz")
	// Output: then: go tool pprof -top -lines offheap.pb.gz
}
