//go:build !race

package offheap

import "unsafe"

// sharedRaceOn is true in race-detector builds; see shared_race.go.
const sharedRaceOn = false

func sharedRaceRelease(unsafe.Pointer) {}

func sharedRaceAcquire(unsafe.Pointer) {}
