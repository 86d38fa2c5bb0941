//go:build !(linux && (amd64 || arm64))

package osmem

import (
	"os"
	"unsafe"
)

// Supported reports whether this system has a backend.
const Supported = false

// PageSize is the operating system's page size.
var PageSize = uintptr(os.Getpagesize())

// Reserve fails: no backend on this system.
func Reserve(n uintptr) (unsafe.Pointer, error) { return nil, ErrUnsupported }

// Map fails: no backend on this system.
func Map(n uintptr) (unsafe.Pointer, error) { return nil, ErrUnsupported }

// Commit fails: no backend on this system.
func Commit(p unsafe.Pointer, n uintptr) error { return ErrUnsupported }

// Protect fails: no backend on this system.
func Protect(p unsafe.Pointer, n uintptr) error { return ErrUnsupported }

// ReadOnly fails: no backend on this system.
func ReadOnly(p unsafe.Pointer, n uintptr) error { return ErrUnsupported }

// Release fails: no backend on this system.
func Release(p unsafe.Pointer, n uintptr) error { return ErrUnsupported }

// NoHugePages fails: no backend on this system.
func NoHugePages(p unsafe.Pointer, n uintptr) error { return ErrUnsupported }

// Unmap fails: no backend on this system.
func Unmap(p unsafe.Pointer, n uintptr) error { return ErrUnsupported }

// Resident fails: no backend on this system.
func Resident(p unsafe.Pointer, n uintptr, vec []byte) error { return ErrUnsupported }

// ResidentBytes fails: no backend on this system.
func ResidentBytes(p unsafe.Pointer, n uintptr) (uint64, error) { return 0, ErrUnsupported }

// Memory returns 0: unknown on this system.
func Memory() uint64 { return 0 }

// Move fails: no backend on this system.
func Move(dst, src unsafe.Pointer, n uintptr) error { return ErrUnsupported }

// HugePageSize is 0: no backend on this system.
var HugePageSize uintptr

// Collapse fails: no backend on this system.
func Collapse(p unsafe.Pointer, n uintptr) error { return ErrUnsupported }

// AnonHugeBytes fails: no backend on this system.
func AnonHugeBytes(ranges [][2]uintptr) (uint64, error) { return 0, ErrUnsupported }

// Renew fails: no backend on this system.
func Renew(p unsafe.Pointer, n uintptr) error { return ErrUnsupported }

// MaxMappings is Linux's default limit, for want of one: nothing is mapped
// on this system.
func MaxMappings() int { return 65530 }

// Populate returns ErrUnsupported: the pages fault in as they are touched.
func Populate(p unsafe.Pointer, n uintptr) error { return ErrUnsupported }
