//go:build race

package offheap

import "testing"

const raceEnabled = true

// skipRace skips a test that a race build cannot run: why says what it
// lacks there (race.go, internal/pageheap/region_race.go).
func skipRace(t *testing.T, why string) {
	t.Helper()
	t.Skip("race build: " + why)
}
