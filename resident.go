package offheap

// ResidentBytes returns how many bytes of the heap's committed memory are
// resident now (mincore on Linux), in whole OS pages: at most about
// Stats.MappedBytes, less where pages were never written. It asks the kernel
// about every committed page: call it when reporting, not on a hot path. It
// returns ErrClosed on a closed heap.
func (h *Heap) ResidentBytes() (uint64, error) {
	// Between enter and exit, which Close waits out: the regions it asks
	// the kernel about stay mapped until it is done.
	if !h.enter() {
		return 0, ErrClosed
	}
	defer h.exit()
	return h.pages.Resident()
}
