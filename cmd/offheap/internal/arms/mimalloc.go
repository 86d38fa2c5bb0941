//go:build cgo && offheap_cgo

package arms

/*
#cgo LDFLAGS: -lmimalloc
#include <mimalloc.h>
*/
import "C"

import (
	"unsafe"

	"github.com/offheap/offheap/cmd/offheap/internal/bench"
)

func init() {
	bench.RegisterArm(bench.Arm{
		Name: "mimalloc",
		Doc:  "mimalloc mi_malloc/mi_free through cgo (libmimalloc-dev)",
		New:  func() (bench.Allocator, error) { return miMalloc{}, nil },
	})
}

type miMalloc struct{}

func (miMalloc) AllocUnzeroed(n int) []byte {
	p := C.mi_malloc(C.size_t(n))
	if p == nil {
		panic("mimalloc: out of memory")
	}
	return unsafe.Slice((*byte)(p), n)
}

func (a miMalloc) Alloc(n int) []byte {
	b := a.AllocUnzeroed(n)
	clear(b)
	return b
}

func (miMalloc) Free(b []byte) { C.mi_free(unsafe.Pointer(unsafe.SliceData(b))) }
