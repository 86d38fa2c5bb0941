package offheap

// fpStack walks frame pointers (checked_fp.go, checked_fp_amd64.s). In
// assembly on amd64, where the walk in Go kept its pointers in memory (to
// keep vet's unsafe.Pointer check quiet) and took twice as long.
//
//go:noescape
func fpStack(pcs *[stackDepth]uintptr) (n int, h uint64)
