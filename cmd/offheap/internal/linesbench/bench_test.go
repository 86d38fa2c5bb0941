package linesbench_test

import (
	"fmt"
	"testing"

	"github.com/offheap/offheap/cmd/offheap/internal/linesbench"
)

// BenchmarkPipe compares lines.Writer with log.New(pipe, "", 0): b.N lines
// of 80 bytes from 1 and 4 goroutines into an os.Pipe drained by another
// goroutine. writes/line counts the Write calls that reach the pipe. Run
// with a fixed count to compare like with like, e.g.
//
//	go test -run XXX -bench Pipe -benchtime 400000x ./lines/
func BenchmarkPipe(b *testing.B) {
	for _, target := range []linesbench.Target{linesbench.Lines, linesbench.Log} {
		for _, g := range []int{1, 4} {
			b.Run(fmt.Sprintf("%s/g%d", target, g), func(b *testing.B) {
				r, err := linesbench.Run(target, b.N, g, 80)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(r.WritesPerLine(), "writes/line")
				b.SetBytes(80)
			})
		}
	}
}
