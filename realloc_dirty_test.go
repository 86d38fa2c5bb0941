package offheap

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/offheap/offheap/internal/pageheap"
)

// TestReallocRegrowZeroed: a large block shrunk, then grown back in place,
// reads as zeros past what it kept, on every page size. The shrink leaves
// the pages of its tail that share an OS page with the block's last page
// parked (dirty, still holding the old bytes); the growth takes them back
// and must zero them, and count them as the dirty pages they are: the
// heap's figures stay exact (ReleasedBytes never wraps, MappedBytes never
// drifts), cycle after cycle, under a Limit, and all of it goes back once
// freed and trimmed. Positive control: with extend reading only the run's
// dirty flag (not its parked one), on 64 KiB pages,
//
//	realloc_dirty_test.go: cycle 0: byte 262145 past the 262145 kept is 0x41
func TestReallocRegrowZeroed(t *testing.T) {
	if buildChecked {
		t.Skip("checked mode copies every Realloc, so that a stale use of the old block is caught")
	}
	for _, c := range []struct {
		opts Options
		zero bool
	}{
		{Options{ProfileBytes: -1, ReleaseDelay: time.Hour, Limit: 4 << 20}, true},
		{Options{ProfileBytes: -1, Limit: 4 << 20}, true},
		{Options{ProfileBytes: -1}, true},
		// The figures alone, where nothing is zeroed.
		{Options{ProfileBytes: -1, ReleaseDelay: time.Hour, Limit: 4 << 20}, false},
		{Options{ProfileBytes: -1}, false},
	} {
		opts := c.opts
		t.Run(fmt.Sprintf("delay=%v/limit=%d/zero=%v", opts.ReleaseDelay, opts.Limit, c.zero), func(t *testing.T) {
			h := newTestHeap(t, opts)
			realloc := reallocFunc(h, c.zero)
			const big, small = 1 << 20, 256<<10 + 1
			var mapped uint64
			for cycle := range 60 {
				b := h.Alloc(big)
				b[0] = 0x41
				for i := 1; i < len(b); i *= 2 {
					copy(b[i:], b[:i])
				}
				b = realloc(b, small)
				if cycle%2 == 0 {
					h.Trim() // the tail's pages that share an OS page with b's last are parked
				} else {
					h.fireReleaseTimer() // the tail is due at once: the timer parks them too
				}
				b = realloc(b, big)
				if i := bytes.IndexFunc(b[small:], func(r rune) bool { return r != 0 }); c.zero && i >= 0 {
					n := 0
					for _, x := range b[small:] {
						if x != 0 {
							n++
						}
					}
					t.Fatalf("cycle %d: byte %d past the %d kept is %#x (%d such bytes)", cycle, small+i, small, b[small+i], n)
				}
				h.Free(b)
				h.Trim()
				st := h.Stats()
				if st.ReleasedBytes > st.MappedBytes+st.ReleasedBytes || st.ReleasedBytes > 1<<40 {
					t.Fatalf("cycle %d: ReleasedBytes %d wrapped", cycle, st.ReleasedBytes)
				}
				if cycle == 1 {
					mapped = st.MappedBytes
				}
				if cycle > 1 && st.MappedBytes > mapped {
					t.Fatalf("cycle %d: %d bytes mapped after Free and Trim, %d after cycle 1", cycle, st.MappedBytes, mapped)
				}
			}
			if st := h.Stats(); st.InUseBytes != 0 || st.MappedBytes > uint64(pageheap.OSPageBytes) {
				t.Fatalf("every block freed and trimmed: %d bytes in use, %d mapped", st.InUseBytes, st.MappedBytes)
			}
		})
	}
}
