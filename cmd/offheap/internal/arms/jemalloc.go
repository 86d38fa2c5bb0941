//go:build cgo && offheap_cgo

package arms

/*
#cgo LDFLAGS: -ljemalloc
#include <stdint.h>
#include <stdio.h>
#include <jemalloc/jemalloc.h>

// Debian's jemalloc is built without a symbol prefix, so its malloc is the
// process's malloc; mallocx and sdallocx are jemalloc's alone whatever the
// build, and sdallocx skips the size lookup on free.
static void *je_alloc(size_t n) { return mallocx(n, 0); }
static void je_dalloc(void *p, size_t n) { sdallocx(p, n, 0); }

// je_purge gives back what jemalloc keeps free: the calling thread's tcache
// to its arenas, then every arena's unused dirty and muzzy pages to the
// system.
static void je_purge(void) {
	char name[64];
	mallctl("thread.tcache.flush", NULL, NULL, NULL, 0);
	snprintf(name, sizeof name, "arena.%u.purge", (unsigned)MALLCTL_ARENAS_ALL);
	mallctl(name, NULL, NULL, NULL, 0);
}

// je_stats refreshes jemalloc's statistics (they are a snapshot taken at
// each "epoch" write) and reads its resident and allocated bytes.
static int je_stats(size_t *resident, size_t *allocated) {
	uint64_t epoch = 1;
	size_t esz = sizeof epoch, sz = sizeof(size_t);
	if (mallctl("epoch", &epoch, &esz, &epoch, esz) != 0) return -1;
	if (mallctl("stats.resident", resident, &sz, NULL, 0) != 0) return -1;
	return mallctl("stats.allocated", allocated, &sz, NULL, 0);
}

// je_metadata reads the bytes jemalloc holds for its metadata (base
// allocations, which it never gives back), as of the last epoch.
static int je_metadata(size_t *metadata) {
	size_t sz = sizeof(size_t);
	return mallctl("stats.metadata", metadata, &sz, NULL, 0);
}
*/
import "C"

import (
	"errors"
	"unsafe"

	"github.com/offheap/offheap/cmd/offheap/internal/bench"
)

func init() {
	bench.RegisterArm(bench.Arm{
		Name: "jemalloc",
		Doc:  "jemalloc mallocx/sdallocx through cgo (libjemalloc-dev)",
		New: func() (bench.Allocator, error) {
			a := &jeMalloc{}
			a.Trim()
			var err error
			a.base, _, err = jeStats()
			return a, err
		},
	})
}

// jeMalloc is the jemalloc arm. Its memory figure (bench.Resident) is
// jemalloc's own: stats.resident, the pages jemalloc maps that hold data
// or its metadata (an upper bound: a page it never touched counts), less
// that figure when the arm was made, so that what the process allocated
// before (jemalloc is its malloc: cgo's and libc's own allocations) and
// the metadata earlier rows left are not charged to this one.
type jeMalloc struct {
	base uint64 // stats.resident when the arm was made, after a purge
}

func (*jeMalloc) AllocUnzeroed(n int) []byte {
	p := C.je_alloc(C.size_t(n))
	if p == nil {
		panic("jemalloc: out of memory")
	}
	return unsafe.Slice((*byte)(p), n)
}

func (a *jeMalloc) Alloc(n int) []byte {
	b := a.AllocUnzeroed(n)
	clear(b)
	return b
}

// Free passes the length as the size: shapes free the slice Alloc returned,
// whose length is the requested size.
func (*jeMalloc) Free(b []byte) {
	C.je_dalloc(unsafe.Pointer(unsafe.SliceData(b)), C.size_t(len(b)))
}

// Trim flushes the calling thread's tcache and purges every arena, as a
// program that reports its memory would: the other threads' tcaches keep
// their blocks (jemalloc can flush a tcache only from its own thread; the
// shapes that read memory run one worker, whose thread is mostly this
// one).
func (*jeMalloc) Trim() { C.je_purge() }

// Close purges what the arm's blocks left free, so that jemalloc's decay
// does not give it back while the next arm reads the process's RSS.
func (a *jeMalloc) Close() error {
	a.Trim()
	return nil
}

// ResidentBytes is stats.resident since the arm was made. It fails when
// jemalloc was built without statistics, or when its statistics say it
// holds fewer bytes resident than its blocks' (stats.allocated), which
// would mean they are not what this arm reads them as.
func (a *jeMalloc) ResidentBytes() (uint64, error) {
	res, alloc, err := jeStats()
	if err == nil && res < alloc {
		err = errors.New("jemalloc: stats.resident below stats.allocated")
	}
	return res - min(res, a.base), err
}

func jeStats() (resident, allocated uint64, err error) {
	var r, al C.size_t
	if C.je_stats(&r, &al) != 0 {
		return 0, 0, errors.New("jemalloc: no statistics (mallctl stats.resident)")
	}
	return uint64(r), uint64(al), nil
}

// jeMetadata is stats.metadata: the bytes of jemalloc's own structures
// (extent records, radix tree nodes, arenas), which stats.resident counts
// and jemalloc keeps for its lifetime, as of the last jeStats.
func jeMetadata() (uint64, error) {
	var m C.size_t
	if C.je_metadata(&m) != 0 {
		return 0, errors.New("jemalloc: no statistics (mallctl stats.metadata)")
	}
	return uint64(m), nil
}
