//go:build !linux

package cache

import "os"

// mapFile maps nothing on this system: LoadFromFile reads the file.
func mapFile(*os.File) (data []byte, unmap func()) { return nil, nil }
