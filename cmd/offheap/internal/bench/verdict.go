package bench

import (
	"fmt"
	"strings"
)

// Verdict is one headline figure checked against the speed target the
// project set for it. Tools read results.json's verdict records: Name,
// Pass, Inconclusive and Measured keep their meaning and their JSON keys.
type Verdict struct {
	Name     string  `json:"name"`     // short id, e.g. "pairs-zeroed"
	Figure   string  `json:"figure"`   // what was compared
	Target   string  `json:"target"`   // e.g. "<= 0.45x"
	Value    float64 `json:"value"`    // the measured ratio
	Measured string  `json:"measured"` // the ratio and its inputs, for people
	Pass     bool    `json:"pass"`
	// Skipped says, in a few words, why the figure could not be computed
	// (a shape or arm not run); Pass is then meaningless.
	Skipped string `json:"skipped,omitempty"`
	// Note says, in a few words, why a computed figure is not judged.
	Note string `json:"note,omitempty"`
	// Inconclusive marks a scaling figure from a machine that did not
	// scale (see Report.Scaled): it is shown, but neither meets nor misses
	// its target.
	Inconclusive bool `json:"inconclusive,omitempty"`
}

// VerdictFunc computes verdicts from a finished report. A shape carries
// the verdicts that judge it (Spec.Verdicts); they run when the shape ran.
type VerdictFunc func(r *Report) []Verdict

// Skip returns a verdict that could not be computed, and why.
func Skip(name, figure, target, why string) Verdict {
	return Verdict{Name: name, Figure: figure, Target: target, Skipped: why}
}

// The three outcomes of a verdict, as Outcome names them.
const (
	Met       = "target met"
	Missed    = "target missed"
	NotJudged = "not judged"
)

// Outcome is Met, Missed or NotJudged.
func (v Verdict) Outcome() string {
	switch {
	case v.Skipped != "" || v.Inconclusive:
		return NotJudged
	case v.Pass:
		return Met
	}
	return Missed
}

// Status is the outcome as a report shows it: "target met", "target
// missed", or "not judged: " and the reason.
func (v Verdict) Status() string {
	switch {
	case v.Skipped != "":
		return NotJudged + ": " + v.Skipped
	case v.Inconclusive:
		return NotJudged + ": " + v.Note
	}
	return v.Outcome()
}

// Tally counts the outcomes in one line: "12 targets met, 1 missed, 2 not
// judged".
func Tally(vs []Verdict) string {
	n := map[string]int{}
	for _, v := range vs {
		n[v.Outcome()]++
	}
	parts := []string{fmt.Sprintf("%d %s met", n[Met], plural(n[Met], "target", "targets"))}
	parts = append(parts, fmt.Sprintf("%d missed", n[Missed]))
	if n[NotJudged] > 0 {
		parts = append(parts, fmt.Sprintf("%d not judged", n[NotJudged]))
	}
	return strings.Join(parts, ", ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
