package offheap

import (
	"os"
	"testing"
	"time"
)

// TestProdConsMappedFlat runs a producer and a consumer for ten seconds and
// checks that mapped memory stays flat: the consumer's frees flow back to
// the producer through the depot instead of piling up. It takes ten
// seconds, so it runs only with OFFHEAP_LONG=1:
//
//	OFFHEAP_LONG=1 go test -run ProdConsMappedFlat -v .
func TestProdConsMappedFlat(t *testing.T) {
	if os.Getenv("OFFHEAP_LONG") == "" {
		t.Skip("set OFFHEAP_LONG=1 to run the ten-second producer/consumer test")
	}
	h := newTestHeap(t, Options{})
	ch := make(chan [][]byte, 8)
	done := make(chan struct{})
	go func() {
		for batch := range ch {
			for _, b := range batch {
				h.Free(b)
			}
		}
		close(done)
	}()
	start := time.Now()
	var first, peak uint64
	blocks := 0
	for tick := 1; time.Since(start) < 10*time.Second; {
		batch := make([][]byte, 256)
		for i := range batch {
			batch[i] = h.AllocUnzeroed(64)
		}
		blocks += len(batch)
		ch <- batch
		if time.Since(start) >= time.Duration(tick)*time.Second {
			m := h.Stats().MappedBytes
			if first == 0 {
				first = m
			}
			peak = max(peak, m)
			t.Logf("%ds: %d blocks, %d bytes mapped", tick, blocks, m)
			tick++
		}
	}
	close(ch)
	<-done
	if peak > first+first/4 {
		t.Fatalf("mapped bytes grew from %d after 1 s to %d", first, peak)
	}
}
