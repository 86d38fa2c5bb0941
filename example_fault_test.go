//go:build !race

package offheap_test

import (
	"fmt"
	"runtime/debug"

	"github.com/offheap/offheap"
)

var faultSink byte

// A use after free of a guarded block faults; on a goroutine that runs
// with debug.SetPanicOnFault the fault is a panic, and FaultError turns it
// into a *MemoryError with the stacks of the block's Alloc and Free and of
// the access. (A race build has no guard pages that fault.)
func ExampleFaultError() {
	h, err := offheap.NewHeap(offheap.Options{GuardPages: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer h.Close()
	b := h.Alloc(64)
	h.Free(b)

	func() {
		defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
		defer func() {
			r := recover()
			if me := offheap.FaultError(r); me != nil {
				fmt.Println(me.Kind)
				fmt.Println("stacks:", me.AllocStack != "", me.FreeStack != "", me.AgainStack != "")
				return
			}
			if r != nil {
				panic(r) // no fault on a guarded block
			}
		}()
		faultSink = b[0] // b's page is inaccessible since its Free
	}()
	// Output:
	// use after free
	// stacks: true true true
}
