package offheap

import (
	"fmt"
	"reflect"
	"sync"
	"unsafe"

	"github.com/offheap/offheap/internal/pageheap"
)

// Allocator is what New and MakeSlice allocate from: a *Heap, *Local or
// *Arena.
type Allocator interface {
	Alloc(n int) []byte
	TryAlloc(n int) ([]byte, error)
	TryAllocUnzeroed(n int) ([]byte, error)
}

// Freer is what Free and FreeSlice give memory back to: the *Heap or a
// *Local of the heap that allocated it.
type Freer interface {
	Free(b []byte)
}

// New allocates a zeroed T from a and returns a pointer to it. T must not
// contain Go pointers (pointers, strings, slices, maps, channels, functions,
// interfaces): the garbage collector does not scan off-heap memory, so what
// they point to could be freed under them. New panics if T contains any,
// naming the first field that does and what to hold there instead.
func New[T any](a Allocator) *T {
	size := mustBePointerFree[T]("New")
	if size == 0 {
		return (*T)(unsafe.Pointer(&zeroSized))
	}
	b := a.Alloc(int(size))
	return (*T)(unsafe.Pointer(unsafe.SliceData(b)))
}

// TryNew is New returning a.TryAlloc's error instead of panicking: ErrLimit,
// ErrAddressSpace, ErrClosed, ErrSize or a syscall.Errno, in the cases
// Local.TryAlloc gives. A T with Go pointers still panics.
func TryNew[T any](a Allocator) (*T, error) {
	size := mustBePointerFree[T]("TryNew")
	if size == 0 {
		return (*T)(unsafe.Pointer(&zeroSized)), nil
	}
	b, err := a.TryAlloc(int(size))
	if err != nil {
		return nil, err
	}
	return (*T)(unsafe.Pointer(unsafe.SliceData(b))), nil
}

// MakeSlice allocates a zeroed slice of n T from a, with len and cap n. T must
// not contain Go pointers (see New). It panics with TryMakeSlice's error.
func MakeSlice[T any](a Allocator, n int) []T {
	return mustSlice(makeSlice[T](a, n, true, "MakeSlice"))
}

// TryMakeSlice is MakeSlice returning the error instead of panicking:
// ErrSize for a negative n or one whose bytes no heap can hold, else
// a.TryAlloc's, as in TryNew. A T with Go pointers still panics.
func TryMakeSlice[T any](a Allocator, n int) ([]T, error) {
	return makeSlice[T](a, n, true, "TryMakeSlice")
}

// MakeSliceUnzeroed is MakeSlice without the zeroing, for a slice the
// caller fills at once (a copy, a decode, a computed []float64): its
// elements are whatever the memory last held, as AllocUnzeroed's bytes.
func MakeSliceUnzeroed[T any](a Allocator, n int) []T {
	return mustSlice(makeSlice[T](a, n, false, "MakeSliceUnzeroed"))
}

// TryMakeSliceUnzeroed is MakeSliceUnzeroed returning TryMakeSlice's errors
// instead of panicking.
func TryMakeSliceUnzeroed[T any](a Allocator, n int) ([]T, error) {
	return makeSlice[T](a, n, false, "TryMakeSliceUnzeroed")
}

// makeSlice is MakeSlice (fn names the call), zeroed or not, returning
// the error the panicking forms panic with.
func makeSlice[T any](a Allocator, n int, zero bool, fn string) ([]T, error) {
	size := mustBePointerFree[T](fn)
	switch {
	case n < 0:
		return nil, fmt.Errorf("%w: %s[%s]: negative length %d", ErrSize, fn, typeName[T](), n)
	case n == 0:
		return []T{}, nil
	case size == 0:
		return unsafe.Slice((*T)(unsafe.Pointer(&zeroSized)), n), nil
	case uintptr(n) > uintptr(maxAlloc)/size:
		return nil, fmt.Errorf("%w: %s[%s]: length %d is too large: more than the %s one allocation can hold",
			ErrSize, fn, typeName[T](), n, pageheap.SizeString(maxAlloc))
	}
	var b []byte
	var err error
	if zero {
		b, err = a.TryAlloc(n * int(size))
	} else {
		b, err = a.TryAllocUnzeroed(n * int(size))
	}
	if err != nil {
		return nil, err
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), n), nil
}

// mustSlice returns s, or panics with err: the panicking forms of the
// slice helpers.
func mustSlice[T any](s []T, err error) []T {
	if err != nil {
		panic(err)
	}
	return s
}

// Free returns *p, allocated by New from a heap or one of its Locals, to
// f: the heap or any of its Locals. A nil p is ignored.
func Free[T any](f Freer, p *T) {
	size := unsafe.Sizeof(*p)
	if p == nil || size == 0 {
		return
	}
	f.Free(unsafe.Slice((*byte)(unsafe.Pointer(p)), size))
}

// FreeSlice returns s, allocated by MakeSlice from a heap or one of its
// Locals, to f: the heap or any of its Locals. s must start where
// MakeSlice's result started; an empty s is ignored.
func FreeSlice[T any](f Freer, s []T) {
	size := unsafe.Sizeof(*new(T))
	if cap(s) == 0 || size == 0 {
		return
	}
	f.Free(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), uintptr(cap(s))*size))
}

// ReallocSlice resizes s, from MakeSlice or ReallocSlice on h, to n elements
// as Realloc does for bytes: the first min(len(s), n) are s's and the rest
// zero, and s must not be used afterwards. s must start where MakeSlice's
// result did (s[:k], not s[1:]). It panics, naming T, for a negative or too
// large n, and as Realloc does; s is then as it was.
func ReallocSlice[T any](h *Heap, s []T, n int) []T {
	return mustSlice(reallocSlice(h, s, n, "ReallocSlice"))
}

// TryReallocSlice is ReallocSlice returning the error, s then as it was:
// ErrSize for a negative n or one whose bytes no heap can hold, else
// TryRealloc's. Misuse panics, as in ReallocSlice.
func TryReallocSlice[T any](h *Heap, s []T, n int) ([]T, error) {
	return reallocSlice(h, s, n, "TryReallocSlice")
}

// reallocSlice is ReallocSlice (fn) or TryReallocSlice, returning what the
// one panics with and the other returns.
func reallocSlice[T any](h *Heap, s []T, n int, fn string) ([]T, error) {
	size := mustBePointerFree[T](fn)
	if n < 0 {
		return nil, fmt.Errorf("%w: %s[%s]: negative length %d", ErrSize, fn, typeName[T](), n)
	}
	if size == 0 {
		return unsafe.Slice((*T)(unsafe.Pointer(&zeroSized)), n), nil
	}
	if uint64(n) > h.pages.MostBytes()/uint64(size) {
		return nil, fmt.Errorf("%w: %s[%s]: length %d is too large: more than the %s this heap's address space can hold",
			ErrSize, fn, typeName[T](), n, pageheap.SizeString(h.pages.MostBytes()))
	}
	// The block is named by all of s's capacity (s[:0] of a block is still
	// that block), so Realloc keeps up to cap(s) elements; those past
	// len(s) are not s's and are zeroed in the result.
	b := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), uintptr(cap(s))*size)
	nb, err := h.TryRealloc(b, n*int(size))
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return []T{}, nil
	}
	if from, to := uintptr(len(s))*size, uintptr(min(cap(s), n))*size; from < to {
		clear(nb[from:to])
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(nb))), n), nil
}

// zeroSized is where New and MakeSlice point for zero-size types.
var zeroSized [0]byte

// pointerFree caches, per type, where it holds a Go pointer: "" for none.
var pointerFree sync.Map // reflect.Type -> string

// mustBePointerFree returns T's size, or panics if T holds Go pointers,
// naming the first field that does and what to use instead.
func mustBePointerFree[T any](fn string) uintptr {
	t := reflect.TypeFor[T]()
	where, cached := pointerFree.Load(t)
	if !cached {
		name := t.Name()
		switch {
		case name != "":
		case t.Kind() == reflect.Struct:
			name = "T" // its field paths read T.Meta.Name
		default:
			name = t.String() // *int, []byte
		}
		where = pointerAt(t, name)
		pointerFree.Store(t, where)
	}
	if where != "" {
		panic(fmt.Sprintf("offheap: %s[%s]: %s; the garbage collector does not see Go pointers in off-heap memory, "+
			"so it could free what they point to", fn, t, where))
	}
	return t.Size()
}

func typeName[T any]() string { return reflect.TypeFor[T]().String() }

// pointerAt returns where values of t, reached by path, hold something the
// garbage collector must see, and what to use instead: "T.Meta.Name is a
// string (hold its bytes in a [N]byte and a length ...)". It returns "" if
// t holds no Go pointers.
func pointerAt(t reflect.Type, path string) string {
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return ""
	case reflect.Array:
		if t.Len() == 0 {
			return ""
		}
		return pointerAt(t.Elem(), path+"[0]")
	case reflect.Struct:
		for i := range t.NumField() {
			if where := pointerAt(t.Field(i).Type, path+"."+t.Field(i).Name); where != "" {
				return where
			}
		}
		return ""
	case reflect.String:
		return path + " is a string (hold its bytes in a [N]byte and a length, or keep the strings on the Go heap and store an index)"
	case reflect.Slice:
		return path + " is a slice (use a fixed-size array, or a MakeSlice of its own whose index or offset you store)"
	case reflect.Pointer, reflect.UnsafePointer:
		return path + " is a pointer (store an index, or the uintptr address of another off-heap block)"
	case reflect.Map:
		return path + " is a map (keep the map on the Go heap and store a key)"
	case reflect.Chan, reflect.Func:
		return path + " is a " + t.Kind().String() + " (keep it on the Go heap and store an index into a table of them)"
	}
	return path + " is an interface (store a small type tag and the value's bytes, or keep it on the Go heap and store an index)"
}
