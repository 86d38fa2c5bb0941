//go:build linux && (amd64 || arm64) && (offheappage16k || offheappage64k)

package osmem

import (
	"errors"
	"os"
	"runtime/debug"
	"syscall"
	"testing"
	"unsafe"
)

// The simulation of larger pages must behave as such a kernel does, or the
// tests that run under it prove nothing.

func TestSimulatedPageSize(t *testing.T) {
	if PageSize != max(simPage, uintptr(os.Getpagesize())) {
		t.Fatalf("PageSize %d, want %d (simulated) on a host with %d", PageSize, simPage, os.Getpagesize())
	}
	if !simulating() {
		t.Skipf("the host's pages (%d) are at least the simulated ones", os.Getpagesize())
	}
}

// mapPages maps n simulated pages, filled with 0xaa.
func mapPages(t *testing.T, n uintptr) []byte {
	t.Helper()
	p, err := Map(n * PageSize)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { Unmap(p, n*PageSize) })
	b := unsafe.Slice((*byte)(p), n*PageSize)
	for i := range b {
		b[i] = 0xaa
	}
	return b
}

func TestSimulatedAlignment(t *testing.T) {
	if !simulating() {
		t.Skip("not simulating")
	}
	for range 16 { // odd lengths, so that the host's next mapping would land unaligned
		for _, mapf := range []func(uintptr) (unsafe.Pointer, error){Reserve, Map} {
			p, err := mapf(12345)
			if err != nil {
				t.Fatal(err)
			}
			if uintptr(p)%PageSize != 0 {
				t.Fatalf("mapped at %#x, not aligned to %d", uintptr(p), PageSize)
			}
			defer Unmap(p, 12345)
		}
	}
	b := mapPages(t, 2)
	odd := unsafe.Pointer(&b[8192])
	for name, f := range map[string]func(unsafe.Pointer, uintptr) error{
		"Commit": Commit, "Protect": Protect, "ReadOnly": ReadOnly, "Release": Release, "Unmap": Unmap,
	} {
		if err := f(odd, 8192); !errors.Is(err, syscall.EINVAL) {
			t.Errorf("%s of %#x (not on a %d-byte page): %v, want EINVAL", name, uintptr(odd), PageSize, err)
		}
	}
	if err := Resident(odd, 8192, make([]byte, 1)); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("Resident of %#x: %v, want EINVAL", uintptr(odd), err)
	}
	for i, v := range b {
		if v != 0xaa {
			t.Fatalf("byte %d is %#x after calls that failed", i, v)
		}
	}
}

// TestSimulatedRelease: a release of 8 KiB gives back the whole page that
// holds them, and not the next one.
func TestSimulatedRelease(t *testing.T) {
	if !simulating() {
		t.Skip("not simulating")
	}
	b := mapPages(t, 2)
	if err := Release(unsafe.Pointer(&b[0]), 8192); err != nil {
		t.Fatal(err)
	}
	if n, err := ResidentBytes(unsafe.Pointer(&b[0]), uintptr(len(b))); err != nil || n != uint64(PageSize) {
		t.Fatalf("ResidentBytes %d, %v; want the page not released, %d", n, err, PageSize)
	}
	for i, v := range b {
		if want := byte(0xaa * (i / int(PageSize))); v != want {
			t.Fatalf("byte %d is %#x after a release of the first 8 KiB, want %#x", i, v, want)
		}
	}
	b[PageSize-1] = 1 // one host page resident makes its simulated page resident
	vec := make([]byte, 2)
	if err := Resident(unsafe.Pointer(&b[0]), uintptr(len(b)), vec); err != nil || vec[0]&1 == 0 || vec[1]&1 == 0 {
		t.Fatalf("Resident %v, %v; want both pages", vec, err)
	}
}

// TestSimulatedProtect: a protection of 8 KiB covers the whole page that
// holds them, and not the next one.
func TestSimulatedProtect(t *testing.T) {
	if !simulating() {
		t.Skip("not simulating")
	}
	b := mapPages(t, 2)
	if err := Protect(unsafe.Pointer(&b[0]), 8192); err != nil {
		t.Fatal(err)
	}
	if !faults(&b[PageSize-1]) {
		t.Fatalf("the last byte of a page of which Protect covered 8 KiB is accessible")
	}
	if faults(&b[PageSize]) {
		t.Fatalf("the first byte of the next page faults")
	}
	if err := Commit(unsafe.Pointer(&b[0]), 8192); err != nil {
		t.Fatal(err)
	}
	if faults(&b[PageSize-1]) || b[PageSize-1] != 0xaa {
		t.Fatalf("Commit did not make the page usable again, its contents kept")
	}
}

// faults reports whether reading *p faults.
func faults(p *byte) (faulted bool) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() { faulted = recover() != nil }()
	sink = *p
	return false
}

var sink byte
