//go:build cgo && offheap_cgo

package arms

import (
	"runtime"
	"testing"

	"github.com/offheap/offheap/cmd/offheap/internal/bench"
)

// TestCgoResident checks the C allocators' memory figures against what a
// test holds: 32 MiB of 256-byte blocks read as about 32 MiB resident, and,
// all freed and trimmed, as next to nothing but jemalloc's metadata
// (mimalloc gives its memory back after a delay of its own, which Trim does
// not cut short: only the first reading is checked for it; nor is glibc's
// in a race build, below).
func TestCgoResident(t *testing.T) {
	// One OS thread for every call: Trim flushes the calling thread's
	// cache only (jemalloc's tcache, mimalloc's heap is per thread), so a
	// goroutine that moved between threads, as it does on a loaded
	// machine, would leave blocks in another thread's cache.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	const n, size = 1 << 17, 256
	for _, name := range []string{"jemalloc", "cgo-malloc", "mimalloc"} {
		as, err := bench.LookupArms([]string{name})
		if err != nil {
			t.Fatal(err)
		}
		a, err := as[0].New()
		if err != nil {
			t.Fatal(err)
		}
		r := a.(bench.Resident)
		var meta uint64 // jemalloc's stats.metadata when the arm was made
		if name == "jemalloc" {
			if meta, err = jeMetadata(); err != nil {
				t.Fatal(err)
			}
		}
		read := func() uint64 {
			r.Trim()
			b, err := r.ResidentBytes()
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			return b
		}
		bs := make([][]byte, n)
		for i := range bs {
			bs[i] = a.Alloc(size)
		}
		if got, live := read(), uint64(n*size); got < live*9/10 || got > live*13/10 {
			t.Errorf("%s: %d MiB resident for %d MiB of blocks, want within 0.9-1.3x", name, got>>20, live>>20)
		}
		for _, b := range bs {
			a.Free(b)
		}
		// Nor is glibc's figure in a race build: it is the process's RSS
		// beyond Go, which there counts the race detector's own memory
		// outside Go (its shadow, goroutines' histories). With glibc
		// holding 3-22 KiB in blocks, it read 5 MiB in 1 of 20 race runs
		// here, and stayed under 4 MiB in 20 of 20 runs without -race.
		got := read()
		// jemalloc's figure counts its metadata (stats.metadata: extent
		// records and radix tree nodes for the blocks' pages), which it
		// keeps for its lifetime in blocks of its own: what its first 32
		// MiB of blocks left read 3.2 MiB, and 1.1 MiB each time after,
		// against a bound for the data pages of 4 MiB. The data pages are
		// held to that bound, the metadata to one of its own.
		if name == "jemalloc" {
			m, err := jeMetadata()
			if err != nil {
				t.Fatal(err)
			}
			grew := m - min(m, meta)
			t.Logf("jemalloc: %d KiB resident with every block freed, %d KiB of it metadata", got>>10, grew>>10)
			if grew > n*size/4 {
				t.Errorf("jemalloc: its metadata grew by %d MiB for %d MiB of blocks, want under %d MiB", grew>>20, n*size>>20, n*size/4>>20)
			}
			got -= min(got, grew)
		}
		if got > n*size/8 && name != "mimalloc" && !(raceBuild && name == "cgo-malloc") {
			t.Errorf("%s: %d MiB resident with every block freed, want under %d MiB", name, got>>20, n*size/8>>20)
		}
		if c, ok := a.(bench.Closer); ok {
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
}
