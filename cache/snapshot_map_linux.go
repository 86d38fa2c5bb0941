package cache

import (
	"os"
	"syscall"
)

// mapFile maps f read-only, its page tables filled at once (MAP_POPULATE)
// so that reading it takes no fault per page. It returns nil where f cannot
// be mapped (empty, or not a regular file): the caller reads it instead.
func mapFile(f *os.File) (data []byte, unmap func()) {
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() <= 0 || fi.Size() != int64(int(fi.Size())) {
		return nil, nil
	}
	data, err = syscall.Mmap(int(f.Fd()), 0, int(fi.Size()), syscall.PROT_READ, syscall.MAP_SHARED|syscall.MAP_POPULATE)
	if err != nil {
		return nil, nil
	}
	return data, func() { _ = syscall.Munmap(data) }
}
