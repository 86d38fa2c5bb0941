package offheap

// fpStack walks frame pointers. In assembly on amd64: a walk in Go must keep
// its pointers in memory to keep vet's unsafe.Pointer check quiet, which makes
// it twice as slow (BenchmarkCallStack; docs/DESIGN.md).
//
//go:noescape
func fpStack(pcs *[stackDepth]uintptr) (n int, h uint64)
