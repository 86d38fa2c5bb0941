package pageheap

import (
	"errors"
	"fmt"
)

// The page heap's refusals. They are the values of the Heap's exported
// errors (ErrLimit, ErrClosed, ErrAddressSpace), so the layers above hand
// them on unchanged and errors.Is holds for the caller.
var (
	ErrLimit        = errors.New("offheap: heap limit reached")   // past the Limit (limitError)
	ErrClosed       = errors.New("offheap: heap is closed")       // after Close
	ErrAddressSpace = errors.New("offheap: out of address space") // (addressSpaceError)
)

// limitError is the limit's refusal, ErrLimit with its figures: the bytes
// of the request, those it needed mapped (whole pages: a span, or the
// block's run), those mapped and the limit.
type limitError struct {
	request             int // 0 where the caller has not named it (requested)
	need, mapped, limit uint64
}

func (e *limitError) Error() string {
	what := "a request"
	if e.request > 0 {
		what = fmt.Sprintf("an allocation of %d bytes", e.request)
	}
	return fmt.Sprintf("%v: %s needs %d bytes more mapped, and %d of the Limit's %d bytes are mapped: "+
		"free blocks, give the heap a larger Options.Limit, or allocate with TryAlloc and handle ErrLimit",
		ErrLimit, what, e.need, e.mapped, e.limit)
}

// Is makes errors.Is(err, ErrLimit) hold.
func (e *limitError) Is(target error) bool { return target == ErrLimit }

// Requested names the request of n bytes in err, if it is the limit's
// refusal, and returns err.
func Requested(err error, n int) error {
	if le := (*limitError)(nil); errors.As(err, &le) && le.request == 0 {
		le.request = n
	}
	return err
}

// addressSpaceError reports that the heap's address space cannot grow: the
// virtual page space is full, or the system refused more address space. It
// is ErrAddressSpace, not ErrLimit: no Limit was reached.
type addressSpaceError struct {
	need uint64 // bytes the allocation needed
	have uint64 // bytes of address space the heap has
	most uint64 // bytes of the heap's virtual page space
	err  error  // the system's refusal, or nil when the virtual space is full
}

func (e *addressSpaceError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("offheap: out of address space: %s more would take the heap past %s, the most one heap can span; free memory, or use another heap",
			SizeString(e.need), SizeString(e.most))
	}
	return fmt.Sprintf("offheap: out of address space: the heap spans %s and the system refused %s more (%v); raise the process's address-space limits (ulimit -v, vm.max_map_count) or free memory",
		SizeString(e.have), SizeString(e.need), e.err)
}

func (e *addressSpaceError) Unwrap() error { return e.err }

// Is makes errors.Is(e, ErrAddressSpace) true.
func (e *addressSpaceError) Is(target error) bool { return target == ErrAddressSpace }

// SizeString formats n bytes in the largest binary unit it fills:
// "512 B", "1.5 KiB", "64.0 MiB".
func SizeString(n uint64) string {
	const units = "KMGTPE"
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	i, v := 0, float64(n)/1024
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	return fmt.Sprintf("%.1f %ciB", v, units[i])
}
