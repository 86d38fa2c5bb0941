// Package offheap gives Go programs manual memory that the garbage collector
// never scans, so millions of live blocks cost no GC cycle anything, and
// that stays fast when every core allocates at once. A program frees each
// block explicitly.
//
//	h, err := offheap.NewHeap(offheap.Options{})
//	if err != nil {
//		return err // wraps errors.ErrUnsupported where the system has no backend
//	}
//	defer h.Close() // last: Close unmaps the heap's memory
//
//	b := h.Alloc(64) // 64 zeroed bytes the collector never scans
//	copy(b, "hello")
//	b = h.Realloc(b, 4096) // grow with Realloc, never with append
//	h.Free(b)              // b must not be used after this
//
// # Choosing a type
//
//   - Package cache, for a key-value cache bounded in the memory it maps.
//   - Heap, for blocks that live and die one by one: Alloc, Free, Realloc
//     from any goroutine; Relocate moves values out of sparse spans.
//   - Local (Heap.NewLocal), for one long-lived goroutine that allocates and
//     frees many blocks: a stock of its own, reached without pinning.
//   - Arena, for many allocations that die together: one Reset or Release.
//   - Shared, for a buffer several owners hold until the last Release.
//   - Ref, a 16-byte handle with no Go pointer, for maps the collector
//     never scans (Heap.Ref, Heap.Bytes, Heap.FreeRef).
//   - Buffer, a growable byte buffer in one block, for io and fmt.
//   - New, MakeSlice and their kin, for pointer-free typed values.
//
// Alloc, Realloc, New, MakeSlice, NewShared and their kin have Try forms
// that return the error the panic carries (ErrLimit, ErrClosed, ErrSize,
// ErrAddressSpace); a Buffer's writes return it.
//
// # The rules
//
//  1. Never store Go pointers in off-heap memory: no pointers, strings,
//     slices, maps, channels, functions or interfaces. The collector does
//     not see them there and may free what they point to. New and MakeSlice
//     refuse such types, naming the field.
//  2. Never use a slice after Free, and free each slice once.
//
// Grow a block with Realloc, not append, which copies a full slice to the Go
// heap. Free panics, leaving the heap intact, on what it can tell is no live
// block of this heap.
//
// # Checked mode
//
// With the offheapchecked build tag (or Options.Checked) misuse panics with a
// *MemoryError carrying the stacks, and Close returns a *LeakError;
// offheaptest.New fails a test with both. go test -race reports data races
// on off-heap bytes as on Go memory.
//
// Every method of Heap is safe for concurrent use except Close. docs/guide.md
// has the details: what Free checks, page sizes, race builds, monitoring.
package offheap
