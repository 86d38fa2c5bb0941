//go:build !race && !offheapchecked

package cache

// lockFreeBuild is true where a cache that owns its heap may read without
// its shards' locks (readers.go).
const lockFreeBuild = true
