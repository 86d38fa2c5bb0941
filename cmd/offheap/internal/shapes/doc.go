// Package shapes holds the workload shapes `offheap bench` runs, one file
// each. Each file registers its shape (and the verdicts that judge it) with
// the bench package in init; importing the package for its side effects
// makes them all available.
//
// The worker loops follow the same rules everywhere: everything a worker
// touches in its loop is a local (the arm handle, sizes, counters), results
// go to a bench.Padded slot of their own, and bench.Parallel releases the
// workers together from a barrier and times to the last one done.
package shapes
