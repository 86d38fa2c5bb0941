//go:build race

package offheap

import (
	"sync/atomic"
	"unsafe"
)

// The race detector does not see off-heap memory, so it does not see the
// synchronization offheap builds there: the count of a Shared, whose every
// Release happens before its OnRelease runs and its block is freed, and the
// per-P counts of operations in progress, whose every exit happens before
// Close unmaps (closing.go). In race builds each such release also adds to
// a word of Go memory chosen by an address (the handle's, the heap's), and
// the acquiring side loads that word: the detector models both as
// synchronizing, which gives it the edge.

const raceOn = true

var raceSync [64]struct {
	n atomic.Uint64
	_ [56]byte
}

func raceWord(p unsafe.Pointer) *atomic.Uint64 {
	return &raceSync[uintptr(p)>>4%uintptr(len(raceSync))].n
}

func raceRelease(p unsafe.Pointer) { raceWord(p).Add(1) }

func raceAcquire(p unsafe.Pointer) { raceWord(p).Load() }
