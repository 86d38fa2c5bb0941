//go:build linux && !race

package offheap

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/offheap/offheap/internal/pageheap"
)

// TestRegionGuards: every region of a heap, the first and the later ones,
// lies between two inaccessible guards of pageheap.RegionGuard bytes (no write that
// runs or skips less than the largest class past a block reaches the
// metadata, or anything else the system maps beside the region), and the
// metadata lies outside every region and its guards.
func TestRegionGuards(t *testing.T) {
	h := newTestHeapFirstRegion(t, unprofiled(Options{}), 8<<20)
	var keep [][]byte
	for h.regionCount() < 3 {
		keep = append(keep, h.Alloc(4<<20))
	}
	b := h.Alloc(64)
	c := h.NewLocal()
	defer c.Close()
	c.Free(c.Alloc(64))
	maps := readMaps(t)
	meta := []struct {
		name string
		a    uintptr
	}{
		{"the pagemap", uintptr(h.pages.Pmap)},
		{"the span array", uintptr(h.pages.Spans)},
		{"a Local's state", uintptr(unsafe.Pointer(c.st))},
	}
	for _, m := range h.mags.all {
		meta = append(meta, struct {
			name string
			a    uintptr
		}{"a magazine", uintptr(unsafe.Pointer(m))})
	}
	for i, r := range h.pages.Regions.Load().ByPage {
		for _, g := range [][2]uintptr{{r.Base - pageheap.RegionGuard, r.Base}, {r.Base + r.Bytes, r.Base + r.Bytes + pageheap.RegionGuard}} {
			if err := maps.inaccessible(g[0], g[1]); err != nil {
				t.Errorf("region %d [%#x, %#x): the guard %v", i, r.Base, r.Base+r.Bytes, err)
			}
		}
		for _, m := range meta {
			if m.a != 0 && m.a >= r.Base-pageheap.RegionGuard && m.a < r.Base+r.Bytes+pageheap.RegionGuard {
				t.Errorf("%s at %#x is inside region %d or its guards", m.name, m.a, i)
			}
		}
	}
	h.Free(b)
	for _, k := range keep {
		h.Free(k)
	}
}

// procMaps is the process's mappings, from /proc/self/maps.
type procMaps []struct {
	lo, hi uintptr
	perms  string
}

func readMaps(t *testing.T) procMaps {
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	var m procMaps
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		lo, hi, _ := strings.Cut(fs[0], "-")
		l, _ := strconv.ParseUint(lo, 16, 64)
		h, _ := strconv.ParseUint(hi, 16, 64)
		m = append(m, struct {
			lo, hi uintptr
			perms  string
		}{uintptr(l), uintptr(h), fs[1]})
	}
	return m
}

// inaccessible reports unless every byte of [lo, hi) is mapped with no
// access (PROT_NONE).
func (m procMaps) inaccessible(lo, hi uintptr) error {
	for a := lo; a < hi; {
		found := false
		for _, e := range m {
			if a >= e.lo && a < e.hi {
				if !strings.HasPrefix(e.perms, "---") {
					return fmt.Errorf("[%#x, %#x) is %s at %#x", lo, hi, e.perms, a)
				}
				a, found = e.hi, true
				break
			}
		}
		if !found {
			return fmt.Errorf("[%#x, %#x) is not mapped at %#x: the system may map anything there", lo, hi, a)
		}
	}
	return nil
}
