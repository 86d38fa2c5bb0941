package linesbench

import "testing"

func TestRun(t *testing.T) {
	for _, target := range []Target{Lines, Log} {
		r, err := Run(target, 1000, 3, 80)
		if err != nil {
			t.Fatalf("%s: %v", target, err)
		}
		if r.Lines != 1000 {
			t.Errorf("%s: %d lines, want 1000", target, r.Lines)
		}
		t.Log(r)
	}
	if r, _ := Run(Log, 100, 1, 80); r.Writes != 100 {
		t.Errorf("log.Logger made %d writes for 100 lines; the harness is not counting", r.Writes)
	}
	if _, err := Run("nope", 1, 1, 1); err == nil {
		t.Error("unknown target accepted")
	}
}
