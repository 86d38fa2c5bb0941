//go:build offheapchecked

package profiletest

import (
	"bytes"
	"testing"

	"github.com/google/pprof/profile"
	"github.com/offheap/offheap"
)

// TestCheckedHeapProfileEmpty: a checked heap, every heap under the
// offheapchecked tag, does not profile: it writes a valid profile without
// samples.
func TestCheckedHeapProfileEmpty(t *testing.T) {
	h, err := offheap.NewHeap(offheap.Options{ProfileBytes: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	b := h.Alloc(1 << 20)
	var buf bytes.Buffer
	if err := h.WriteProfile(&buf); err != nil {
		t.Fatal(err)
	}
	p, err := profile.Parse(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Sample) != 0 {
		t.Errorf("%d samples from a checked heap", len(p.Sample))
	}
	h.Free(b)
}
