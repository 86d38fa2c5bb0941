//go:build cgo && offheap_cgo

package arms

/*
#cgo LDFLAGS: -ljemalloc
#include <jemalloc/jemalloc.h>

// Debian's jemalloc is built without a symbol prefix, so its malloc is the
// process's malloc; mallocx and sdallocx are jemalloc's alone whatever the
// build, and sdallocx skips the size lookup on free.
static void *je_alloc(size_t n) { return mallocx(n, 0); }
static void je_dalloc(void *p, size_t n) { sdallocx(p, n, 0); }
*/
import "C"

import (
	"unsafe"

	"github.com/offheap/offheap/cmd/offheap/internal/bench"
)

func init() {
	bench.RegisterArm(bench.Arm{
		Name: "jemalloc",
		Doc:  "jemalloc mallocx/sdallocx through cgo (libjemalloc-dev)",
		New:  func() (bench.Allocator, error) { return jeMalloc{}, nil },
	})
}

type jeMalloc struct{}

func (jeMalloc) AllocUnzeroed(n int) []byte {
	p := C.je_alloc(C.size_t(n))
	if p == nil {
		panic("jemalloc: out of memory")
	}
	return unsafe.Slice((*byte)(p), n)
}

func (a jeMalloc) Alloc(n int) []byte {
	b := a.AllocUnzeroed(n)
	clear(b)
	return b
}

// Free passes the length as the size: shapes free the slice Alloc returned,
// whose length is the requested size.
func (jeMalloc) Free(b []byte) {
	C.je_dalloc(unsafe.Pointer(unsafe.SliceData(b)), C.size_t(len(b)))
}
