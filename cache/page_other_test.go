//go:build !offheappage64k

package cache_test

// pageScale is how many times larger than on 4-8 KiB pages the heap's spans,
// and so its fixed reserve per size class, are.
const pageScale = 1
