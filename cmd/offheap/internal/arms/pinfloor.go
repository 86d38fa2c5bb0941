package arms

import (
	"errors"
	"unsafe"

	"github.com/offheap/offheap/cmd/offheap/internal/bench"
	"github.com/offheap/offheap/internal/pin"
)

func init() {
	bench.RegisterArm(bench.Arm{
		Name:    "pin-floor",
		Doc:     "not an allocator to use: per-P stacks of Go memory behind two pinned sections, no central list, census or check; what a pinned design's pair cannot go below (pairs only: its stacks, 8 deep, are no floor where blocks stay live or cross Ps)",
		Default: true,
		// A floor for pairs only: with more blocks live than its stacks
		// hold, or blocks freed on another P, it makes and drops Go
		// memory, and runs slower than offheap.
		Only: []string{"pairs"},
		New: func() (bench.Allocator, error) {
			if raceBuild {
				// The detector cannot see that pinning orders the
				// goroutines of one P, and reports their stacks' slots.
				return nil, errors.New("not in a race build: the race detector does not see that pinning orders a P's goroutines")
			}
			return new(pinFloor), nil
		},
	})
}

// pinFloor is the least an allocator built on per-P stacks pays: Alloc pins
// the goroutine, pops a block of the size's power-of-two class from its P's
// stack and unpins; Free pins, pushes and unpins. An empty stack makes the
// block with make, and a full one drops it to the garbage collector, so no
// central list, census, size-class table or check stands between the two
// pinned sections. offheap's pair through the Heap adds those to it; a
// pair through a Local, which needs no pin, can go below it.
type pinFloor struct {
	procs [pinFloorProcs]pinFloorProc
}

// pinFloorProcs bounds the Ps the arm keeps stacks for; Ps beyond it share
// them modulo, as pinned sections on one P at a time.
const pinFloorProcs = 256

// pinFloorDepth is each class's stack depth per P: enough for the pairs
// and for a few live blocks per class.
const pinFloorDepth = 8

// pinFloorProc is one P's stacks, padded so that no two Ps share a line.
// The stacks hold unsafe.Pointers, which the garbage collector sees: the
// blocks are Go memory.
type pinFloorProc struct {
	n     [poolClasses]uint8
	slots [poolClasses][pinFloorDepth]unsafe.Pointer
	_     [64]byte
}

func (f *pinFloor) AllocUnzeroed(n int) []byte {
	c := poolClass(n)
	if c >= poolClasses {
		return make([]byte, n)
	}
	p := &f.procs[uint(pin.Pin())%pinFloorProcs]
	var b unsafe.Pointer
	if k := p.n[c]; k > 0 {
		p.n[c] = k - 1
		b = p.slots[c][k-1]
	}
	pin.Unpin()
	if b == nil {
		return make([]byte, n, 1<<c)
	}
	return unsafe.Slice((*byte)(b), 1<<c)[:n]
}

// Alloc zeroes the block, as the other arms' Alloc does.
func (f *pinFloor) Alloc(n int) []byte {
	b := f.AllocUnzeroed(n)
	clear(b)
	return b
}

func (f *pinFloor) Free(b []byte) {
	c := poolClass(cap(b))
	if c >= poolClasses || cap(b) != 1<<c {
		return // not one of its blocks' sizes: the collector takes it
	}
	p := &f.procs[uint(pin.Pin())%pinFloorProcs]
	if k := p.n[c]; k < pinFloorDepth {
		p.slots[c][k] = unsafe.Pointer(unsafe.SliceData(b))
		p.n[c] = k + 1
	}
	pin.Unpin()
}
