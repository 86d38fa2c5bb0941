//go:build cgo && offheap_cgo

package arms

/*
#cgo LDFLAGS: -lmimalloc
#include <mimalloc.h>
*/
import "C"

import (
	"runtime/debug"
	"time"
	"unsafe"

	"github.com/offheap/offheap/cmd/offheap/internal/bench"
)

func init() {
	bench.RegisterArm(bench.Arm{
		Name: "mimalloc",
		Doc:  "mimalloc mi_malloc/mi_free through cgo (libmimalloc-dev)",
		New: func() (bench.Allocator, error) {
			a := &miMalloc{}
			a.Trim()
			a.start()
			return a, nil
		},
	})
}

// miMalloc is the mimalloc arm. Its memory figure (bench.Resident) is the
// process's (processRSS), as the glibc arm's is. mimalloc's
// own count, the bytes it has committed (mi_process_info), is not
// resident memory: it commits its segments eagerly and whole (89 MiB
// committed for 64 MiB of 256-byte blocks, of which 71 MiB were resident).
type miMalloc struct {
	processRSS
}

func (*miMalloc) AllocUnzeroed(n int) []byte {
	p := C.mi_malloc(C.size_t(n))
	if p == nil {
		panic("mimalloc: out of memory")
	}
	return unsafe.Slice((*byte)(p), n)
}

func (a *miMalloc) Alloc(n int) []byte {
	b := a.AllocUnzeroed(n)
	clear(b)
	return b
}

func (*miMalloc) Free(b []byte) { C.mi_free(unsafe.Pointer(unsafe.SliceData(b))) }

// Trim is mi_collect(true): the calling thread's heap frees its empty
// pages and gives back its free segments' memory, as a program that
// reports its memory would; then debug.FreeOSMemory, for the reading's
// subtraction of Go's memory (bench.RSSBeyondGo). The heaps of other
// threads keep what they hold until they collect (mimalloc collects a
// heap only from its own thread, and a goroutine's cgo calls run on
// whichever thread it is on).
func (*miMalloc) Trim() {
	C.mi_collect(true)
	debug.FreeOSMemory()
}

// Close waits out mimalloc's delayed decommit (mi_option_decommit_delay,
// and segment_decommit_delay, 500 ms by default) and collects again, so
// that the memory this arm's blocks leave behind is given back before the
// next arm reads the process's RSS as its base.
func (*miMalloc) Close() error {
	C.mi_collect(true)
	time.Sleep(600 * time.Millisecond)
	C.mi_collect(true)
	return nil
}

// ResidentBytes is the process's RSS beyond Go since the arm was made.
func (a *miMalloc) ResidentBytes() (uint64, error) { return a.since(), nil }
