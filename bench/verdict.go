package bench

// Verdict is one headline figure checked against its target.
type Verdict struct {
	Name     string  `json:"name"`     // short id, e.g. "pairs-zeroed"
	Figure   string  `json:"figure"`   // what was compared
	Target   string  `json:"target"`   // e.g. "<= 0.45x"
	Value    float64 `json:"value"`    // the measured ratio
	Measured string  `json:"measured"` // the ratio and its inputs, for people
	Pass     bool    `json:"pass"`
	// Skipped says why the figure could not be computed (a shape or arm
	// not run); Pass is then meaningless.
	Skipped string `json:"skipped,omitempty"`
	// Note qualifies a result, e.g. that the machine did not scale.
	Note string `json:"note,omitempty"`
	// Inconclusive marks a scaling figure from a machine that did not
	// scale (see Report.Scaled): it is shown, but neither passes nor fails.
	Inconclusive bool `json:"inconclusive,omitempty"`
}

// VerdictFunc computes verdicts from a finished report. A shape carries
// the verdicts that judge it (Shape.Verdicts); they run when the shape ran.
type VerdictFunc func(r *Report) []Verdict

// Skip returns a skipped verdict.
func Skip(name, figure, target, why string) Verdict {
	return Verdict{Name: name, Figure: figure, Target: target, Skipped: why}
}

// Status is PASS, FAIL, SKIP (not computed) or N/A (computed, but from a
// machine that did not scale, for a scaling figure).
func (v Verdict) Status() string {
	switch {
	case v.Skipped != "":
		return "SKIP"
	case v.Inconclusive:
		return "N/A"
	case v.Pass:
		return "PASS"
	}
	return "FAIL"
}
