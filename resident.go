package offheap

import "github.com/offheap/offheap/internal/osmem"

// ResidentBytes returns how many bytes of the heap's committed address space
// are resident in physical memory now, as the operating system reports
// them (mincore on Linux), in whole OS pages. Released pages are not
// resident, so it is at most about Stats.MappedBytes (with OS pages above
// 8 KiB, it may pass it by the clean free pages that share an OS page with
// a page in use), and it can be far less: a page that was committed but
// never written costs no memory. The heap's metadata (its pagemap, the
// magazines, a checked heap's records) is not counted: the pagemap costs 8
// bytes for each 8 KiB page of a live block or of a free page not yet
// released (0.1%, so 256 MiB for an untouched 256 GiB block), and goes back
// to the system with the pages it describes, at Trim or after ReleaseDelay;
// a checked heap's records cost what its blocks' pages do, given back the
// same way.
//
// ResidentBytes takes the page heap's lock only to read how far the heap
// has committed, then asks the kernel about every page up to there: one
// system call per 16 MiB (with 4 KiB pages) in which the kernel walks that
// range's page tables, so its cost grows with the committed address space,
// not with the bytes in use, and a heap that has committed many GiB pays
// milliseconds. Call it when reporting, not on a hot path. It returns
// ErrClosed on a closed heap.
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
