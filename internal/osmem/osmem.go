// Package osmem asks the operating system for address space and pages: reserve,
// commit, release, protect, unmap. Every call works on page-aligned ranges
// given as a base pointer and a length; nothing here touches the Go heap.
package osmem

import "errors"

// ErrUnsupported is returned on systems where offheap has no memory backend.
var ErrUnsupported = errors.New("offheap: no off-heap memory backend for this operating system")
