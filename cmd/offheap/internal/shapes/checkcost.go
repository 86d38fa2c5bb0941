package shapes

import (
	"fmt"
	"strings"

	"github.com/offheap/offheap/cmd/offheap/internal/bench"
)

// The cost of checked mode and of sampling: the offheap-checked
// and offheap-sampled arms against the fast offheap arm, one worker, on the
// pairs and live-k shapes. Neither arm is in the default list, so these
// verdicts appear only in a run that selects one of them:
//
//	go run ./cmd/offheap bench -arms offheap,offheap-checked,offheap-sampled -shapes compute,pairs,live-k

// checkCosts are the arms judged and the most each may cost, as a multiple
// of the fast arm's time.
var checkCosts = []struct {
	arm   string
	limit float64
}{
	{"offheap-checked", 3},
	{"offheap-sampled", 1.1},
}

// checkCostVerdicts judges every arm of checkCosts that ran on shape: its
// time over the offheap arm's, at one worker, worst over subs.
func checkCostVerdicts(r *bench.Report, shape string, subs []string) []bench.Verdict {
	var vs []bench.Verdict
	for _, cc := range checkCosts {
		name := shape + "-" + cc.arm
		figure := fmt.Sprintf("%s, 1 goroutine: %s / offheap, worst over %s", shape, cc.arm, strings.Join(subs, " "))
		if len(subs) == 1 {
			figure = fmt.Sprintf("%s %s, 1 goroutine: %s / offheap", shape, subs[0], cc.arm)
		}
		target := fmt.Sprintf("<= %.2fx", cc.limit)
		worst, measured, ran, skip := 0.0, "", false, ""
		var cells []*bench.Summary
		for _, sub := range subs {
			c := r.Find(shape, sub, cc.arm, 1)
			if c == nil {
				continue
			}
			ran = true
			f, why := find(r, shape, sub, "offheap", 1)
			if f == nil {
				skip = why
				break
			}
			if v := c.MinNs / f.MinNs; v > worst {
				worst, cells = v, []*bench.Summary{c, f}
				measured = fmt.Sprintf("%.2fx at %s (%s vs %s ns/pair)", v, sub, bench.Num(c.MinNs), bench.Num(f.MinNs))
			}
		}
		switch {
		case !ran: // the arm was not selected: no line
		case skip != "":
			vs = append(vs, bench.Skip(name, figure, target, skip))
		default:
			vs = append(vs, atMost(bench.Verdict{Name: name, Figure: figure, Target: target, Value: worst,
				Measured: measured}, cc.limit, cells...))
		}
	}
	return vs
}
