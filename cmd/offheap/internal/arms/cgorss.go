//go:build cgo && offheap_cgo

package arms

import "github.com/offheap/offheap/cmd/offheap/internal/bench"

// processRSS is the memory figure of a C allocator that keeps no count of
// its resident pages (glibc's malloc, mimalloc): the process's RSS less the
// Go runtime's memory (bench.RSSBeyondGo), since the arm was made. It
// counts whatever else outside Go grew or shrank meanwhile, so the arm
// must be made, and read, with its allocator trimmed and Go's free pages
// released.
type processRSS struct {
	base uint64 // RSSBeyondGo when the arm was made
}

// start takes the base. Call it once the allocator has been trimmed.
func (p *processRSS) start() { p.base = bench.RSSBeyondGo() }

// since is RSSBeyondGo now, less the base.
func (p *processRSS) since() uint64 {
	n := bench.RSSBeyondGo()
	return n - min(n, p.base)
}
