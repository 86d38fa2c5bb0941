package linesbench_test

import (
	"fmt"

	"github.com/offheap/offheap/cmd/offheap/internal/linesbench"
)

// How a bench command compares the two targets: same lines, same pipe.
func ExampleRun() {
	for _, g := range []int{1, 4} {
		lw, err := linesbench.Run(linesbench.Lines, 400_000, g, 80)
		if err != nil {
			panic(err)
		}
		lg, err := linesbench.Run(linesbench.Log, 400_000, g, 80)
		if err != nil {
			panic(err)
		}
		fmt.Printf("%d goroutines: lines/log time %.2f, %.4f writes/line\n",
			g, float64(lw.Elapsed)/float64(lg.Elapsed), lw.WritesPerLine())
	}
}
