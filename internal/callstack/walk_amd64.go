package callstack

// Walk walks frame pointers. In assembly on amd64: a walk in Go must keep
// its pointers in memory to keep vet's unsafe.Pointer check quiet, which makes
// it twice as slow (BenchmarkCallStack; docs/DESIGN.md).
//
//go:noescape
func Walk(pcs *[Depth]uintptr) (n int, h uint64)
