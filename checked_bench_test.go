package offheap

import (
	"fmt"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/offheap/offheap/internal/callstack"
	"github.com/offheap/offheap/internal/pin"
)

// The cost of checked mode and of sampling, against the fast heap:
//
//	go test -run XXX -bench 'Checked' -count 5 .
//
// arm=fast is the zero Options; arm=checked is Options{Checked: true};
// arm=sampled is Options{GuardOneIn: 1000}. BenchmarkCallStack shows what
// the frame-pointer walk saves over runtime.Callers.

var checkedArms = []struct {
	name string
	opts Options
}{
	{"fast", Options{}},
	{"checked", Options{Checked: true}},
	{"sampled", Options{GuardOneIn: 1000}},
}

// BenchmarkCheckedPair64 is one goroutine allocating and freeing 64 bytes.
// arm=floor is checkedFloor: the least the checks cost.
func BenchmarkCheckedPair64(b *testing.B) {
	for _, arm := range checkedArms {
		b.Run("arm="+arm.name, func(b *testing.B) {
			h := newTestHeap(b, arm.opts)
			for b.Loop() {
				h.Free(h.Alloc(64))
			}
		})
	}
	b.Run("arm=floor", func(b *testing.B) {
		f := newCheckedFloor()
		for b.Loop() {
			f.free(f.alloc(64))
		}
	})
}

// checkedFloor is the least checked mode's work on a 64-byte block can
// cost, written out in two functions: what a checked Alloc and Free must do
// by the checked-mode issue (a stack each, the record, the canary, the
// compare-and-swap that catches a double free, the poison written and then
// checked when the block leaves a quarantine of 1024), with none of what
// the heap adds around it: no size class, no pagemap lookup (a block's
// record is at its index), no census, no spans, one pinned section per
// operation, one P. If this costs more than 3x a fast pair, so does any
// checked mode that does all of it.
type checkedFloor struct {
	c     checker // for its id: canaryKey, seal
	base  uintptr // floorBlocks blocks of floorSize bytes
	mem   []byte
	stock []uint32 // the free blocks' indexes: the magazine
	ring  [1024]uint32
	head  uint32
	n     uint32
	recs  [floorBlocks]record
}

const (
	floorBlocks = 2048
	floorSize   = 80 // 64 bytes and the canary, as a checked heap's class
)

func newCheckedFloor() *checkedFloor {
	f := &checkedFloor{mem: make([]byte, floorBlocks*floorSize+16)}
	f.c.id = 0x9e3779b97f4a7c15
	f.base = (uintptr(unsafe.Pointer(&f.mem[0])) + 15) &^ 15
	for i := range uint32(floorBlocks) {
		f.stock = append(f.stock, i)
	}
	return f
}

func (f *checkedFloor) alloc(n int) []byte {
	pin.Pin()
	k := len(f.stock) - 1
	i := f.stock[k]
	f.stock = f.stock[:k]
	pin.Unpin()
	a := f.base + uintptr(i)*floorSize
	r := &f.recs[i]
	var st stack // walked from this frame, as allocSmall does
	r.alloc = callstack.Intern(&st, st.Fill(callstack.Walk(&st.PCs)))
	r.size = uint64(n)
	r.sum = f.c.seal(a, uint64(n))
	r.free = 0
	r.state = stateLive
	canary(f.c.canaryKey(a), a+uintptr(n), a+floorSize, true)
	b := bytesAt(a, n)
	clear(b)
	return b
}

func (f *checkedFloor) free(b []byte) {
	a := addrOf(b)
	i := uint32((a - f.base) / floorSize)
	r := &f.recs[i]
	if !atomic.CompareAndSwapUint32(&r.state, stateLive, stateFreeing) {
		panic("floor: double free")
	}
	if r.sum != f.c.seal(a, r.size) {
		panic("floor: corrupted")
	}
	if !canary(f.c.canaryKey(a), a+uintptr(r.size), a+floorSize, false) {
		panic("floor: overrun")
	}
	var st stack
	r.free = callstack.Intern(&st, st.Fill(callstack.Walk(&st.PCs)))
	r.state = stateFreed
	poisonWords(a, floorSize)
	pin.Pin()
	f.ring[(f.head+f.n)%1024] = i
	f.n++
	if f.n > 1024 {
		out := f.ring[f.head%1024]
		f.head++
		f.n--
		if !poisonedWords(f.base+uintptr(out)*floorSize, floorSize) {
			panic("floor: write after free")
		}
		f.recs[out].state = stateNone
		f.stock = append(f.stock, out)
	}
	pin.Unpin()
}

// BenchmarkCheckedLiveK keeps k=8 blocks live per class (4 classes) before
// freeing them: the shape where a cache that holds one block is not enough.
func BenchmarkCheckedLiveK(b *testing.B) {
	sizes := []int{32, 64, 256, 1024}
	const k = 8
	for _, arm := range checkedArms {
		b.Run(fmt.Sprintf("k=%d/arm=%s", k, arm.name), func(b *testing.B) {
			liveKRounds(b, newTestHeap(b, arm.opts), k, sizes)
		})
	}
}

// BenchmarkCallStack is one stack captured and interned, as checked mode
// does twice per pair: arm=frame-pointers is callStack's walk, arm=callers
// runtime.Callers, which systems without the walk use.
func BenchmarkCallStack(b *testing.B) {
	callstack.InitDepot()
	b.Run("arm=frame-pointers", func(b *testing.B) {
		for b.Loop() {
			callStack()
		}
	})
	b.Run("arm=callers", func(b *testing.B) {
		for b.Loop() {
			callersStack()
		}
	})
}
