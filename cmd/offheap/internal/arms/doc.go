// Package arms holds the allocators `offheap bench` compares, one file each.
// Each file registers its arm with bench.RegisterArm in init; importing the
// package (for its side effects) makes them all available.
//
// The arms for C allocators (cgo-malloc, jemalloc, mimalloc) build only with
// the offheap_cgo tag, so that an ordinary cgo build needs no C libraries:
//
//	apt-get install -y libjemalloc-dev libmimalloc-dev
//	go run -tags offheap_cgo ./cmd/offheap bench -arms offheap,cgo-malloc,jemalloc,mimalloc
package arms
