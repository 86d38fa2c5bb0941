package offheap

import (
	"os"
	"testing"

	"github.com/offheap/offheap/internal/osmem"
	"github.com/offheap/offheap/internal/pageheap"
)

// TestGuardMappingsDegrade: guard pages stop short of their share of the
// kernel's mappings (internal/pageheap/guard_maps.go). With room for ten guard pages, a heap
// that guards every allocation hands out fifty blocks on runs of their own:
// ten guarded, forty without a guard page, all of them recorded as
// guarded blocks, and the heap's regions never hold more mappings than the
// ten guard pages cost; Free gives the mappings back, and Close those of
// the blocks still live. Positive control: with takeGuardMappings always
// true,
//
//	guard_maps_test.go: 50 guarded blocks: the heap's regions hold 103 mappings, 3 before them, room for 20 more
func TestGuardMappingsDegrade(t *testing.T) {
	skipRace(t, "guard pages are not protected in a race build")
	held0, skipped0 := guardMappingsHeld()
	const room = 10 * pageheap.GuardMappings
	setGuardMappingsMost(t, room)
	h := newTestHeap(t, Options{GuardOneIn: 1, ProfileBytes: -1})
	n := 3 * int(pageheap.OSPageBytes) // more than the pool's and the spares' one OS page of data
	first := h.Alloc(n)                // the heap's regions as the blocks find them
	before := heapMaps(t, h)
	var bs [][]byte
	for range 50 {
		b := h.Alloc(n)
		info, ok := h.Lookup(addrOf(b))
		if !ok || !info.Guarded {
			t.Fatalf("Alloc(%d) not a guarded block: %+v %v", n, info, ok)
		}
		b[n-1] = 1
		bs = append(bs, b)
	}
	if m := heapMaps(t, h); os.Getenv("OFFHEAP_QEMU_USER") == "" && m > before+room { // qemu-user makes up its maps
		t.Fatalf("50 guarded blocks: the heap's regions hold %d mappings, %d before them, room for %d more", m, before, room)
	}
	held, skipped := guardMappingsHeld()
	if held > held0+room+pageheap.GuardMappings || skipped-skipped0 < 50-room/pageheap.GuardMappings {
		t.Fatalf("guard pages hold %d mappings (%d before, room for %d); %d runs left unguarded", held, held0, room, skipped-skipped0)
	}
	for _, b := range bs[:25] {
		h.Free(b)
	}
	h.Trim() // the quarantine's runs go back to the page heap
	h.Free(first)
	h.Close()
	if held, _ := guardMappingsHeld(); held != held0 {
		t.Fatalf("closed: guard pages hold %d mappings, %d before", held, held0)
	}
}

// TestGuardMappingsTorture is issue 37's reproducer for guard sampling,
// opt-in (a few GiB of address space, and it takes the process to the
// kernel's mapping limit where guard pages do not stop short of it):
//
//	OFFHEAP_MAPS=1 go test -run GuardMappingsTorture -v .
//
// With GuardOneIn 2, 300,000 live blocks, about 150,000 of them sampled:
// every Alloc succeeds and the process keeps room for mappings.
func TestGuardMappingsTorture(t *testing.T) {
	if os.Getenv("OFFHEAP_MAPS") == "" {
		t.Skip("set OFFHEAP_MAPS=1 to run")
	}
	skipRace(t, "guard pages are not protected in a race build")
	h := newTestHeap(t, Options{GuardOneIn: 2, ProfileBytes: -1})
	start := processMaps(t)
	_, skipped0 := guardMappingsHeld()
	bs := make([][]byte, 300000)
	for i := range bs {
		bs[i] = h.Alloc(64)
		bs[i][0] = 1
	}
	held, skipped := guardMappingsHeld()
	end := processMaps(t)
	t.Logf("300000 live blocks: %d mappings (%d at the start), guard pages hold %d, %d runs unguarded", end, start, held, skipped-skipped0)
	if limit := osmem.MaxMappings(); end > limit-limit/4 {
		t.Errorf("%d mappings, within a quarter of the kernel's %d", end, limit)
	}
	for _, b := range bs {
		h.Free(b)
	}
	h.Trim()
	t.Logf("freed and trimmed: %d mappings", processMaps(t))
}
