package pin

import (
	"runtime"
	"testing"
)

func TestPinReturnsValidP(t *testing.T) {
	n := runtime.GOMAXPROCS(0)
	for range 1000 {
		id := Pin()
		Unpin()
		if id < 0 || id >= n {
			t.Fatalf("Pin() = %d, want in [0, %d)", id, n)
		}
	}
}

func BenchmarkPinUnpin(b *testing.B) {
	for b.Loop() {
		Pin()
		Unpin()
	}
}
