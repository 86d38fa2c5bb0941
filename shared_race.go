//go:build race

package offheap

import (
	"sync/atomic"
	"unsafe"
)

// The race detector does not see atomics on off-heap memory, so it would not
// see that every Release of a handle happens before its OnRelease runs and
// its block is freed. In race builds each Release also adds to a word of Go
// memory chosen by the handle's address, and the last release loads that
// word: the detector models both as synchronizing, which gives it the edge.

const sharedRaceOn = true

var sharedRaceSync [64]struct {
	n atomic.Uint64
	_ [56]byte
}

func sharedRaceWord(p unsafe.Pointer) *atomic.Uint64 {
	return &sharedRaceSync[uintptr(p)>>4%uintptr(len(sharedRaceSync))].n
}

func sharedRaceRelease(p unsafe.Pointer) { sharedRaceWord(p).Add(1) }

func sharedRaceAcquire(p unsafe.Pointer) { sharedRaceWord(p).Load() }
