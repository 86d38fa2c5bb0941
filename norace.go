//go:build !race

package offheap

import "unsafe"

// raceOn is true in race-detector builds; see race.go. Without -race the
// annotations are empty and inline to nothing.
const raceOn = false

func raceRelease(unsafe.Pointer) {}

func raceAcquire(unsafe.Pointer) {}
