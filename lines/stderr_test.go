package lines

import (
	"bytes"
	"log"
	"os"
	"os/exec"
	"strings"
	"testing"
)

func TestStderrLineMode(t *testing.T) {
	if !NewWriter(os.Stderr).lineMode {
		t.Error("a Writer on os.Stderr batches its lines")
	}
	two := os.NewFile(2, "fd 2") // another *os.File on the same descriptor
	if !NewWriter(two).lineMode {
		t.Error("a Writer on descriptor 2 batches its lines")
	}
	if NewWriter(os.Stderr, LineMode(false)).lineMode {
		t.Error("LineMode(false) does not override the stderr default")
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	if NewWriter(pw).lineMode {
		t.Error("a Writer on a pipe that is not stderr writes a line at a time")
	}
	if !NewWriter(pw, LineMode(true)).lineMode {
		t.Error("LineMode(true) does not mark a writer as unbuffered")
	}
}

// fatalChild is the environment variable that makes the test binary the
// child of TestFatalThroughStderr.
const fatalChild = "LINES_TEST_FATAL_CHILD"

// TestFatalThroughStderr runs a child process that logs through a Writer on
// its standard error, a pipe, and ends with log.Fatal, which calls os.Exit
// right after its Write: the message must reach the parent, because a
// Writer on stderr writes every line at once. A batched Writer would lose
// it (the child's second mode, the positive control).
func TestFatalThroughStderr(t *testing.T) {
	switch os.Getenv(fatalChild) {
	case "stderr":
		log.SetOutput(NewWriter(os.Stderr))
		log.SetFlags(0)
		log.Print("starting")
		log.Fatal("fatal: disk full")
	case "batched":
		log.SetOutput(NewWriter(os.Stderr, LineMode(false)))
		log.SetFlags(0)
		log.Fatal("fatal: disk full")
	}
	for _, mode := range []string{"stderr", "batched"} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestFatalThroughStderr$")
		cmd.Env = append(os.Environ(), fatalChild+"="+mode)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr // a pipe, not a terminal
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
			t.Fatalf("%s: child ended with %v, want exit status 1 from log.Fatal", mode, err)
		}
		got := stderr.String()
		switch mode {
		case "stderr":
			if got != "starting\nfatal: disk full\n" {
				t.Errorf("stderr: the parent read %q, want both lines", got)
			}
		case "batched":
			if strings.Contains(got, "disk full") {
				t.Errorf("batched: the parent read %q: the control lost nothing, so it shows nothing", got)
			}
		}
	}
}
