//go:build cgo && offheap_cgo

package arms

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdlib.h>
#include <malloc.h>

// glibc's allocator, found in libc.so.6 itself: the process's malloc, and
// even __libc_malloc, may be another allocator's (Debian's jemalloc is
// unprefixed, and mimalloc also defines the __libc_ names), and this arm
// must stay glibc's. dlsym on libc's own handle looks in libc and what it
// depends on, not in the libraries loaded before it.
static void *(*glibc_malloc)(size_t);
static void (*glibc_free)(void *);
static int (*glibc_trim)(size_t);
static struct mallinfo2 (*glibc_mallinfo2)(void);

static int libc_init(void) {
	void *h = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	if (h == NULL) return -1;
	glibc_malloc = dlsym(h, "malloc");
	glibc_free = dlsym(h, "free");
	glibc_trim = dlsym(h, "malloc_trim");
	glibc_mallinfo2 = dlsym(h, "mallinfo2");
	return glibc_malloc && glibc_free && glibc_trim && glibc_mallinfo2 ? 0 : -1;
}
static void *libc_malloc(size_t n) { return glibc_malloc(n); }
static void libc_free(void *p) { glibc_free(p); }
static void libc_trim(void) { glibc_trim(0); }
static size_t libc_inuse(void) {
	struct mallinfo2 m = glibc_mallinfo2();
	return m.uordblks + m.hblkhd;
}
*/
import "C"

import (
	"errors"
	"runtime/debug"
	"sync"
	"unsafe"

	"github.com/offheap/offheap/cmd/offheap/internal/bench"
)

func init() {
	bench.RegisterArm(bench.Arm{
		Name: "cgo-malloc",
		Doc:  "glibc malloc/free through cgo (each call pays the cgo transition)",
		New: func() (bench.Allocator, error) {
			if err := libcOnce(); err != nil {
				return nil, err
			}
			a := &cMalloc{}
			a.Trim()
			a.start()
			return a, nil
		},
	})
}

// cMalloc is the glibc arm. glibc keeps no count of its resident pages, so
// its memory figure (bench.Resident) is the process's (processRSS), never
// taken below what glibc's arenas hold in blocks (mallinfo2's bytes in use,
// InUseBytes): another C allocator giving pages back meanwhile would take
// them off this arm's figure.
type cMalloc struct {
	processRSS
}

func (*cMalloc) AllocUnzeroed(n int) []byte {
	p := C.libc_malloc(C.size_t(n))
	if p == nil {
		panic("cgo-malloc: out of memory")
	}
	return unsafe.Slice((*byte)(p), n)
}

func (a *cMalloc) Alloc(n int) []byte {
	b := a.AllocUnzeroed(n)
	clear(b)
	return b
}

func (*cMalloc) Free(b []byte) { C.libc_free(unsafe.Pointer(unsafe.SliceData(b))) }

// Trim is malloc_trim(0), which releases every whole free page of every
// arena, as a program that reports its memory would; then
// debug.FreeOSMemory, so that the Go heap's free pages, which the reading
// takes away from RSS as Go's, are not resident either.
func (*cMalloc) Trim() {
	C.libc_trim()
	debug.FreeOSMemory()
}

// Close trims glibc's arenas, so that what the arm's blocks left free is
// not resident while the next arm reads the process's RSS.
func (*cMalloc) Close() error {
	C.libc_trim()
	return nil
}

// ResidentBytes is the process's RSS beyond Go since the arm was made, or
// InUseBytes if more.
func (a *cMalloc) ResidentBytes() (uint64, error) {
	return max(a.since(), a.InUseBytes()), nil
}

// InUseBytes is what glibc's arenas hold in blocks (mallinfo2's uordblks
// and hblkhd): the bytes asked for and glibc's headers and rounding.
func (*cMalloc) InUseBytes() uint64 { return uint64(C.libc_inuse()) }

// libcOnce finds glibc's allocator, once.
var libcOnce = sync.OnceValue(func() error {
	if C.libc_init() != 0 {
		return errors.New("cgo-malloc: glibc's malloc not found in libc.so.6")
	}
	return nil
})
