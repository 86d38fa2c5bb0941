package offheap

import (
	"fmt"
	"testing"
)

// The cost of checked mode and of sampling, against the fast heap:
//
//	go test -run XXX -bench 'Checked' -count 5 .
//
// arm=fast is the zero Options; arm=checked is Options{Checked: true};
// arm=sampled is Options{SampleRate: 1000}; arm=checked-callers is checked
// mode capturing stacks with runtime.Callers instead of frame pointers, to
// show what the frame-pointer walk saves.

var checkedArms = []struct {
	name    string
	opts    Options
	callers bool
}{
	{"fast", Options{}, false},
	{"checked", Options{Checked: true}, false},
	{"sampled", Options{SampleRate: 1000}, false},
	{"checked-callers", Options{Checked: true}, true},
}

// BenchmarkCheckedPair64 is one goroutine allocating and freeing 64 bytes.
func BenchmarkCheckedPair64(b *testing.B) {
	for _, arm := range checkedArms {
		b.Run("arm="+arm.name, func(b *testing.B) {
			if arm.callers {
				framePointers = false
				defer func() { framePointers = fpDefault }()
			}
			h := newTestHeap(b, arm.opts)
			for b.Loop() {
				h.Free(h.Alloc(64))
			}
		})
	}
}

// BenchmarkCheckedLiveK keeps k=8 blocks live per class (4 classes) before
// freeing them: the shape where a cache that holds one block is not enough.
func BenchmarkCheckedLiveK(b *testing.B) {
	sizes := []int{32, 64, 256, 1024}
	const k = 8
	for _, arm := range checkedArms {
		b.Run(fmt.Sprintf("k=%d/arm=%s", k, arm.name), func(b *testing.B) {
			if arm.callers {
				framePointers = false
				defer func() { framePointers = fpDefault }()
			}
			liveKRounds(b, newTestHeap(b, arm.opts), k, sizes)
		})
	}
}

// fpDefault is framePointers as the build set it.
var fpDefault = framePointers
