package offheap

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRaceDetector builds testdata/racecheck with -race and runs its
// scenarios, each in a process of its own (see the package doc, Race
// detector, and docs/DESIGN.md, Race builds). The racy ones must make the
// race detector report a data race on off-heap memory between the two
// functions named here, as it would on Go memory; the correct ones, which synchronize through offheap alone
// where it hands memory from one goroutine to another, must get no report.
//
// It runs in the plain test run only: its children are race builds, and
// one run is enough.
func TestRaceDetector(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a race-detector program")
	}
	if raceEnabled {
		t.Skip("the plain test run builds and runs the race-detector program")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build the program with")
	}
	if out, err := exec.Command(goTool, "env", "CGO_ENABLED").Output(); err != nil || strings.TrimSpace(string(out)) != "1" {
		t.Skip("the race detector needs cgo")
	}
	bin := filepath.Join(t.TempDir(), "racecheck")
	if out, err := exec.Command(goTool, "build", "-race", "-o", bin, "./testdata/racecheck").CombinedOutput(); err != nil {
		t.Fatalf("go build -race ./testdata/racecheck: %v\n%s", err, out)
	}
	run := func(t *testing.T, scenario string) (string, int) {
		t.Helper()
		// A scenario that never ends is a hang: it is stopped near the
		// test binary's deadline, whatever the machine's speed.
		ctx, cancel := context.Background(), func() {}
		if d, ok := t.Deadline(); ok && time.Until(d) > 2*waitMargin {
			ctx, cancel = context.WithDeadline(ctx, d.Add(-waitMargin))
		}
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, scenario)
		// No second's sleep at exit; the detector's exit status for a race.
		cmd.Env = append(os.Environ(), "GORACE=atexit_sleep_ms=0 exitcode=66")
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		switch {
		case err == nil:
			return string(out), 0
		case errors.As(err, &ee) && ee.Exited():
			return string(out), ee.ExitCode()
		}
		t.Fatalf("racecheck %s: %v\n%s", scenario, err, out)
		return "", 0
	}

	racy := []struct{ scenario, a, b string }{
		{"alloc", "allocWriterA", "allocWriterB"},        // Heap.Alloc's bytes
		{"arena", "arenaWriterA", "arenaWriterB"},        // an Arena's
		{"shared", "sharedWriterA", "sharedWriterB"},     // a Shared's
		{"write-after-free", "staleWriter", "nextOwner"}, // a Free's last owner and the block's next
		{"ref-map", "refReader", "refReplacer"},          // a Ref map's value read after the lock, and replaced
	}
	// The detector misses a race now and then: the arena scenario went
	// unreported in 8 runs of 300 (at 4d5362a; alloc in none of 100), its
	// two writes unordered but the report never printed. So a racy scenario
	// gets racyTries runs and must be reported in one; a detector blind to
	// off-heap memory misses it in all of them.
	const racyTries = 5
	for _, c := range racy {
		t.Run(c.scenario, func(t *testing.T) {
			var out string
			var code int
			for try := 1; try <= racyTries; try++ {
				out, code = run(t, c.scenario)
				if code == 66 && strings.Contains(out, "WARNING: DATA RACE") &&
					strings.Contains(out, "main."+c.a+"()") && strings.Contains(out, "main."+c.b+"()") {
					if try > 1 {
						t.Logf("reported at run %d of %d", try, racyTries)
					}
					return
				}
			}
			t.Errorf("%d runs: exit status %d, want 66 and a data race between %s and %s reported:\n%s", racyTries, code, c.a, c.b, out)
		})
	}
	correct := []string{
		"handoff", "handoff-far", "checked-handoff", "reuse-closed", "depot", "pages",
		"churn", "churn-checked", "churn-cache", "arena-rounds", "shared-handoff",
		"ref-map-copy",
	}
	for _, scenario := range correct {
		t.Run(scenario, func(t *testing.T) {
			out, code := run(t, scenario)
			if code != 0 || strings.Contains(out, "DATA RACE") || !strings.Contains(out, "racecheck "+scenario+": ok") {
				t.Errorf("exit status %d, want 0, no data race and the end reached:\n%s", code, out)
			}
		})
	}
}
