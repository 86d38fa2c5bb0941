//go:build linux && (amd64 || arm64)

package osmem

import (
	"testing"
	"unsafe"
)

// BenchmarkSample is what one guarded allocation of a sampled heap pays the
// kernel (offheap's guard.go): its data page made accessible again and
// written (a fault), then made inaccessible when it is freed. The noop arm is
// one mprotect that changes nothing, the floor of any system call that
// touches the address space. A GuardOneIn of N spreads this over N
// allocations, so it is the figure that decides what sampling costs:
//
//	go test -run '^$' -bench Sample -count 5 ./internal/osmem
//
// On the 2-vCPU VM of the README: noop 1.4 µs, a sample 17 µs, so 17 ns
// per allocation at GuardOneIn 1000, where a fast Alloc+Free pair takes 11.
func BenchmarkSample(b *testing.B) {
	const pages = 256 // cycled through, so that no page is hot in the TLB
	ps := PageSize
	p, err := Map(pages * ps)
	if err != nil {
		b.Fatal(err)
	}
	defer Unmap(p, pages*ps)
	page := func(i int) unsafe.Pointer { return unsafe.Add(p, uintptr(i%pages)*ps) }
	b.Run("arm=noop", func(b *testing.B) {
		i := 0
		for b.Loop() {
			if err := Commit(page(i), ps); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("arm=sample", func(b *testing.B) {
		for i := range pages {
			*(*byte)(page(i)) = 1
		}
		i := 0
		for b.Loop() {
			q := page(i)
			if err := Protect(q, ps); err != nil { // the Free
				b.Fatal(err)
			}
			if err := Commit(q, ps); err != nil { // the next Alloc
				b.Fatal(err)
			}
			*(*byte)(q) = byte(i)
			i++
		}
	})
}
