//go:build !race

package offheap

import "testing"

const raceEnabled = false

// skipRace skips a test under -race; this build runs it.
func skipRace(*testing.T, string) {}
