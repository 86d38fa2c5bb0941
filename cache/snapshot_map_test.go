//go:build linux

package cache

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestLoadMappedFault loads a snapshot from a mapping with a page in the
// middle of a block made inaccessible, as a file cut under its mapping
// after the blocks were found would leave it: the workers' reads fault,
// and the load returns ErrSnapshot with the process going on. The same
// mapping with the page readable, the positive control, loads.
func TestLoadMappedFault(t *testing.T) {
	c, err := New(Options{MaxBytes: 4 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i := range 20000 {
		c.Set(fmt.Appendf(nil, "key %d", i), fmt.Appendf(nil, "a value of key %d", i))
	}
	path := filepath.Join(t.TempDir(), "snap")
	if err := c.SaveToFile(path); err != nil {
		t.Fatal(err)
	}
	snap, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	page := os.Getpagesize()
	if len(snap) < 8*page {
		t.Fatalf("a snapshot of %d bytes: too short to fault in a block's middle", len(snap))
	}
	for _, fault := range []bool{false, true} {
		data, err := syscall.Mmap(-1, 0, len(snap), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
		if err != nil {
			t.Fatal(err)
		}
		copy(data, snap)
		if fault {
			// A page the block-finding scan does not read: past the
			// header and the first block's header, before the trailer.
			if err := syscall.Mprotect(data[2*page:3*page], syscall.PROT_NONE); err != nil {
				t.Fatal(err)
			}
		}
		d, err := New(Options{MaxBytes: 4 << 20})
		if err != nil {
			t.Fatal(err)
		}
		_, err = d.loadMapped(data)
		switch {
		case fault && !errors.Is(err, ErrSnapshot):
			t.Errorf("a mapping that faults: loadMapped = %v, want ErrSnapshot", err)
		case !fault && (err != nil || d.Len() != c.Len()):
			t.Errorf("a whole mapping: loadMapped = %v with %d entries, want nil with %d", err, d.Len(), c.Len())
		}
		d.Close()
		if err := syscall.Munmap(data); err != nil {
			t.Fatal(err)
		}
	}
}
