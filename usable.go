package offheap

// UsableSize returns the size of the block that b starts: the request
// rounded up to its size class or to whole pages. Realloc within it keeps
// the block where it is, except for the profile's samples and in a checked
// heap, whose blocks are exactly their request. A b of capacity 0 gives 0;
// one that is no live block of this heap panics, as in Free.
func (h *Heap) UsableSize(b []byte) int {
	if cap(b) == 0 {
		return 0
	}
	if !h.enter() {
		panic(closedError("UsableSize"))
	}
	defer h.exit()
	a := addrOf(b)
	if h.checked() {
		return h.recordSize(a, cap(b))
	}
	switch p := h.freeable(a); p.kind {
	case placeSmall, placeRun:
		return int(p.size)
	case placeGuarded:
		return h.recordSize(a, cap(b))
	default:
		panic(p.refusal("UsableSize", a, cap(b)))
	}
}
