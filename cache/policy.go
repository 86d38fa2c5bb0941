package cache

import "sync/atomic"

// The eviction policy's main area: CLOCK with a 2-bit frequency counter,
// swept over the index's slots. The "clock" is the shard's table itself, so
// the main area costs no memory beyond two bits of each slot; new entries
// first pass through probation (probation.go).
//
// A new entry starts at 0; a hit sets it to 3. When a shard needs room and
// the probation queue has none to give, the hand walks the table from where
// it stopped: an expired entry is removed (an expiration), an entry at 0 is
// evicted, a probationary one is passed over, and any other is lowered by
// one and passed over. An entry read since the hand last passed survives
// three more sweeps without another hit. (Setting the counter to 3 on a hit
// measured better than adding one, or than a single bit.) docs/DESIGN.md,
// The cache package, compares the policy with S3-FIFO, SIEVE and W-TinyLFU
// on Zipf traces with and without scans.
//
// Work per eviction is bounded: after four sweeps every counter is 0, so the
// hand visits at most 4*len(slots) slots (it stops sooner in practice).

// touch marks live slot i as read: its counter goes to 3. It runs under the
// shard's read lock, so other readers may touch the slot too: the bits are
// set atomically, and only where they are not set already, so that a hot
// entry's slot is not written on every read.
func (t *table) touch(i uint64) {
	if atomic.LoadUint64(&t.slots[i])>>freqShift&freqMax != freqMax {
		atomic.OrUint64(&t.slots[i], freqMax<<freqShift)
	}
}

// victim advances the shard's hand to the next slot to remove, skipping
// keep (a slot the caller is replacing, or ^0), and returns it with whether
// it had expired. now is 0 where the shard holds no entry with an expiry,
// and the hand then reads slots only, not entries. It returns false if the table has no slot other than keep.
func (s *shard) victim(keep uint64, now int64) (i uint64, expired, ok bool) {
	t := &s.index
	if t.live == 0 || (t.live == 1 && keep != ^uint64(0)) {
		return 0, false, false
	}
	for n := 4*len(t.slots) + 1; n > 0; n-- {
		i = s.hand & t.mask
		s.hand++
		v := t.slots[i]
		if !slotLive(v) || i == keep || v&probBit != 0 {
			continue // probationary entries leave through the probation queue
		}
		if now != 0 { // the shard holds entries with an expiry: read this one's
			if x := slotEntry(v).expiry(); x != 0 && x <= now {
				return i, true, true
			}
		}
		if slotFreq(v) == 0 {
			return i, false, true
		}
		t.slots[i] = v - 1<<freqShift
	}
	return 0, false, false
}
