package pageheap

import (
	"math"
	"time"
	"unsafe"

	"github.com/offheap/offheap/internal/osmem"
)

// The page heap's making: its first region and its metadata, reserved once
// by NewHeap, with the release timer's and huge pages' settings.

const (
	// defaultReserve is the first region of a heap without a large Limit:
	// 64 GiB (less on a 32-bit system, which has no backend and never
	// reserves; the bound only keeps the constant representable). A heap
	// with a Limit above half of it reserves twice the Limit, up to
	// maxFirstRegion, so that its blocks take Free's fast path. Less, down
	// to minReserve, where the system refuses that much.
	defaultReserve      = min(64<<30, math.MaxInt/2+1)
	maxFirstRegion      = min(1<<40, math.MaxInt/2+1)
	minReserve          = 64 << 20
	defaultReleaseDelay = time.Second
)

// Reserve maps the heap's first region, of size bytes (0: chosen for the
// limit), and reserves its metadata for the largest virtual page space; a
// shadowed heap gets a shadow of each region (the checker's record table).
// delay is Options.ReleaseDelay, and huge Options.HugePages. spanPages is
// the pages of each small class's span, by class: the page heap walks its
// pages by them, and sizes the span array for the shortest.
func (ph *Heap) Reserve(limit int64, size uintptr, shadowed bool, delay time.Duration, huge bool, spanPages []uint8) error {
	ph.spanPages = spanPages
	ph.minSpan = math.MaxUint64
	for _, n := range spanPages[1:] {
		ph.minSpan = min(ph.minSpan, uint64(n))
	}
	if size == 0 {
		size = uintptr(defaultReserve)
		if limit > defaultReserve/2 {
			size = uintptr(min(uint64(limit), maxFirstRegion/2)) * 2
		}
	}
	size = AlignUp(firstRegionSize(size), OSPageBytes)
	var base, shadow unsafe.Pointer
	var err error
	for {
		if base, err = MapRegion(size); err == nil {
			if !shadowed {
				break
			}
			if shadow, err = mapShadow(size); err == nil {
				break
			}
			UnmapRegion(base, size)
		}
		if size/2 < minReserve {
			return err
		}
		size /= 2 // a system with a tight address-space limit
	}
	unmap := func() {
		UnmapRegion(base, size)
		if shadow != nil {
			osmem.Unmap(shadow, size)
		}
	}
	pages := uint32(size >> PageShift)
	maxPages := uint64(MaxVirtPages)
	var meta unsafe.Pointer
	for {
		if meta, err = osmem.Reserve(metaBytes(maxPages, ph.minSpan)); err == nil {
			break
		}
		if maxPages/2 <= uint64(pages) {
			unmap()
			return err
		}
		maxPages /= 2
	}
	// The pagemap and span array are written a few words at a time, and
	// given back in system pages (releasePagemap): a transparent huge page
	// would hold a whole 2 MiB resident for a word and keep it so. Kernels
	// without transparent huge pages refuse the advice, which they do not
	// need.
	_ = osmem.NoHugePages(meta, metaBytes(maxPages, ph.minSpan))
	ph.Base, ph.Size, ph.pages0 = uintptr(base), size, pages
	ph.Pmap, ph.MetaBytes, ph.MaxPages = meta, metaBytes(maxPages, ph.minSpan), uint32(maxPages)
	ph.Spans = unsafe.Add(meta, maxPages*8)
	r := &region{Base: uintptr(base), Bytes: size, Pages: pages, Shadow: shadow}
	if err := ph.commitMeta(r); err != nil {
		unmap()
		osmem.Unmap(meta, ph.MetaBytes)
		return err
	}
	ph.shadowed = shadowed
	ph.Regions.Store(&regionSet{ByPage: []*region{r}, byAddr: []*region{r}})
	ph.reservedBytes = size
	epoch := time.Now()
	ph.Clock = func() int64 { return int64(time.Since(epoch)) }
	ph.Free = make(map[uint32]freeRun)
	ph.freeEnd = make(map[uint32]uint32)
	ph.delay = delay
	if ph.delay == 0 {
		ph.delay = defaultReleaseDelay
	}
	ph.tick = int64(max(ph.delay/ReleaseTicks, minReleaseTick))
	if limit > 0 {
		ph.Limit = max(uint64(limit)>>PageShift, 1)
	}
	if huge {
		ph.initHuge()
	}
	return nil
}
