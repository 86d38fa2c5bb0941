package offheap

import (
	"runtime"
	"testing"
)

// TestProdConsMappedFlat runs a producer that allocates 64-byte blocks in
// batches of 256 and a consumer that frees them, and checks that mapped
// memory stays flat however much flows through: the consumer's frees flow
// back to the producer through the depot instead of piling up. The bound is
// the heap's own: the blocks in flight (the channel's batches, one in the
// consumer's hands and one in the producer's), what the Ps' magazines and
// the class's depot may hold, a span's worth of slack per P, and in checked
// mode the quarantine. The work, not the time, is fixed, and it is several
// times the bound, so blocks that piled up would pass it.
func TestProdConsMappedFlat(t *testing.T) {
	const size, perBatch, queued = 64, 256, 8
	batches := 4000 // 64 MiB through the heap
	if testing.Short() {
		batches = 1000 // 16 MiB
	}
	h := newTestHeap(t, unprofiled(Options{}))
	c := sizeClass(size)
	inFlight := (queued + 2) * perBatch * int(classSize[c])
	span := int(classPages[c]) * pageSize
	perP := int(classCap(DefaultMagazineDepth, int(c)))*int(classSize[c]) + span
	bound := uint64(inFlight + runtime.GOMAXPROCS(0)*perP + depotBytes + span)
	if churn := uint64(batches * perBatch * size); churn < 4*bound {
		t.Fatalf("setup: %d bytes through the heap against a bound of %d: too little to see a pile-up", churn, bound)
	}
	if h.chk != nil {
		bound += uint64(h.chk.q.maxBytes) // the quarantine keeps the last blocks freed
	}
	ch := make(chan [][]byte, queued)
	done := make(chan struct{})
	go func() {
		for batch := range ch {
			for _, b := range batch {
				h.Free(b)
			}
		}
		close(done)
	}()
	var peak uint64
	for i := range batches {
		batch := make([][]byte, perBatch)
		for j := range batch {
			batch[j] = h.AllocUnzeroed(size)
		}
		ch <- batch
		if i%64 == 0 {
			peak = max(peak, h.Stats().MappedBytes)
		}
	}
	close(ch)
	<-done
	s := h.Stats()
	peak = max(peak, s.MappedBytes)
	t.Logf("%d blocks of %d bytes: mapped at most %d bytes, bound %d", batches*perBatch, size, peak, bound)
	if peak > bound {
		t.Errorf("mapped bytes reached %d, bound %d: freed blocks piled up instead of flowing back", peak, bound)
	}
	if s.InUseBytes != 0 {
		t.Errorf("InUseBytes %d after every block was freed", s.InUseBytes)
	}
}
