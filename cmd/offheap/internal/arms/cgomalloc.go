//go:build cgo && offheap_cgo

package arms

/*
#include <stdlib.h>

// The glibc entry points by their own names: linking jemalloc replaces the
// process's malloc, and this arm must stay glibc's.
extern void *__libc_malloc(size_t);
extern void __libc_free(void *);

static void *libc_malloc(size_t n) { return __libc_malloc(n); }
static void libc_free(void *p) { __libc_free(p); }
*/
import "C"

import (
	"unsafe"

	"github.com/offheap/offheap/cmd/offheap/internal/bench"
)

func init() {
	bench.RegisterArm(bench.Arm{
		Name: "cgo-malloc",
		Doc:  "glibc malloc/free through cgo (each call pays the cgo transition)",
		New:  func() (bench.Allocator, error) { return cMalloc{}, nil },
	})
}

type cMalloc struct{}

func (cMalloc) AllocUnzeroed(n int) []byte {
	p := C.libc_malloc(C.size_t(n))
	if p == nil {
		panic("cgo-malloc: out of memory")
	}
	return unsafe.Slice((*byte)(p), n)
}

func (a cMalloc) Alloc(n int) []byte {
	b := a.AllocUnzeroed(n)
	clear(b)
	return b
}

func (cMalloc) Free(b []byte) { C.libc_free(unsafe.Pointer(unsafe.SliceData(b))) }
