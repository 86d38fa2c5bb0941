package offheap

import "github.com/offheap/offheap/internal/osmem"

// ResidentBytes returns how many bytes of the heap's committed memory are
// resident now (mincore on Linux), in whole OS pages: at most about
// Stats.MappedBytes, less where pages were never written. It asks the kernel
// about every committed page: call it when reporting, not on a hot path. It
// returns ErrClosed on a closed heap.
func (h *Heap) ResidentBytes() (uint64, error) {
	ph := &h.pages
	ph.mu.Lock()
	if ph.closed {
		ph.mu.Unlock()
		return 0, ErrClosed
	}
	// Every region but the current one is committed whole (addRegion
	// commits the rest of the old one); the current one up to its frontier.
	regions := ph.regions.Load().byPage
	frontier := uintptr(ph.frontier) << pageShift
	ph.mu.Unlock()
	var total uint64
	for i, r := range regions {
		n := r.bytes
		if i == len(regions)-1 {
			n = frontier
		}
		b, err := osmem.ResidentBytes(ptr(r.base), n)
		if err != nil {
			return total, err
		}
		total += b
	}
	return total, nil
}
