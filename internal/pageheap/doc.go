// Package pageheap is the bottom layer of offheap's heap: the address space
// of one heap, reserved in regions, cut into 8 KiB pages and handed out in
// runs; the pagemap, one word per page, which Free reads without a lock;
// the release of free pages to the system, huge pages, and the kernel
// mappings the heap costs.
//
// It knows nothing of the layers above it but what they give it: each
// size class's span length when a heap is made (Heap.Reserve), the words
// a span's pages carry (Heap.AllocSpan) and MappedChanged. They reach it
// through Heap's methods and the fields it publishes, and hand on its
// errors (ErrLimit, ErrClosed, ErrAddressSpace) as their own. One lock,
// Heap.Mu, guards its state; the pagemap and the region set are read
// without it.
package pageheap
