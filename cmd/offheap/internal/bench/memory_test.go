package bench_test

import (
	"slices"
	"testing"

	"github.com/offheap/offheap/cmd/offheap/internal/bench"
)

// TestArmsJoinMemoryShapes: the memory shapes run their ways alone in a run
// that names no arms, and with -arms the named arms whose memory can be
// read, the offheap and go-make ways standing in for those arms.
func TestArmsJoinMemoryShapes(t *testing.T) {
	cfg := config("drift")
	cfg.Arms = nil
	cfg.Scale = 0.01
	r, err := bench.Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rows := r.Shape("drift").Rows; !slices.Equal(rows, []string{"offheap", "offheap-defrag", "go-make"}) {
		t.Errorf("drift rows with no -arms: %v, want [offheap offheap-defrag go-make]", rows)
	}
	cfg.Arms = []string{"offheap-nomag", "sync-pool", "go-make", "offheap"}
	if r, err = bench.Run(cfg); err != nil {
		t.Fatal(err)
	}
	want := []string{"offheap-nomag", "go-make", "offheap"}
	if rows := r.Shape("drift").Rows; !slices.Equal(rows, want) {
		t.Errorf("drift rows with -arms %v: %v, want %v (sync-pool's memory cannot be read)", cfg.Arms, rows, want)
	}
	if s := r.Find("drift", "", "offheap-nomag", 1); s == nil || s.Metrics["peak"] == 0 {
		t.Errorf("drift, offheap-nomag: no peak resident / live measured (%+v)", s)
	}
}
