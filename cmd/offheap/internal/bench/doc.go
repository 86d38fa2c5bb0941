// Package bench is the engine behind `offheap bench`: it runs every workload
// shape against every allocator arm, at several worker counts and several
// interleaved runs, each shape from the same starting state, checks each
// offheap arm's census after every trial, and writes the report (tables with
// their legend, verdicts and their tally, Go benchmark format, JSON, SVG
// plots, HTML).
//
// Arms and shapes live in their own packages (internal/arms,
// internal/shapes), one file each, and register themselves in init. Adding
// one is adding one file (or, for a way or a size, editing the one file of
// its shape); nothing in this package, the command or the other files
// changes, and -h, the tables, the plots and the report pick it up from
// the registry.
//
// # Adding an arm
//
// An arm is an allocator every arm shape runs the same way. Add a file to
// internal/arms:
//
//	func init() {
//		bench.RegisterArm(bench.Arm{
//			Name: "my-alloc",
//			Doc:  "one line for -h",
//			New:  func() (bench.Allocator, error) { return newMyAlloc() },
//		})
//	}
//
// Alloc(n) must return n zeroed bytes, Free a slice Alloc returned. An arm
// may also implement AllocUnzeroed (Unzeroed), Stats (StatsSource: the
// runner then checks its census after every trial and reports its magazine
// hit rate), Close (Closer), Worker (PerWorker, when each worker needs a
// handle of its own), and ResidentBytes with Trim (Resident) or GoHeap
// (GoHeap) for the shapes' resident / live figures (MemoryProbe). A New that fails marks the arm unavailable for the run,
// which goes on without it. Default: true puts it in the default -arms list.
// OwnerFrees keeps an arm whose blocks must go back through the handle that
// allocated them (a per-worker cache) off the shapes that free blocks on
// another worker (Spec.CrossFrees: prodcons, larson, scratch); Only keeps an
// arm to the shapes it names.
//
// # Adding a shape
//
// A shape is a workload. Add a file to internal/shapes that registers it in
// init, with a Spec: a Name, a one-line Doc, whether total or per-worker work
// is fixed (Work), the Unit of one op, and optionally Subs (row groups such as
// sizes: adding a size is adding a Sub; FirstWorkers runs one at the first
// worker count only), Workers, Metrics (extra columns, each with a line for
// the legend), Plot (the metrics to plot instead of ns per op) and Verdicts
// (figures judged against targets; see internal/shapes/judge.go).
//
//   - RegisterArmShape, when every arm runs it the same way: a row per arm.
//     Run(t, arm) sizes its work with t.Size(quick, long), runs t.Workers
//     workers with Parallel (or Rounds, for work in rounds with a barrier
//     between), gets each worker's handle with ForWorker(arm, w), frees
//     everything it allocated, and returns the ops timed and the allocations
//     made (the census check compares them).
//   - RegisterWayShape, when the rows are ways of the shape's own (the gc
//     shape's three ways of holding a live set, the arena against heap pairs
//     and make). Each Way has a Name, a Doc and its own Run(t); adding a row
//     is adding a Way to the shape's file. A way named "null" that runs the
//     shape's loop without the work measured lets scaling verdicts tell a
//     machine that did not scale from a figure that missed. With Arms (and
//     Joins) set, the arms named with -arms join the ways (the memory
//     shapes, frag and drift: every arm whose memory a MemoryProbe can read).
//
// # Measuring
//
// Run's loop order is shape, run, row, sub, workers: the rows of a shape are
// interleaved within each run, so that drift hits them alike, and an arm
// shape gets a fresh instance of every arm per (shape, run). Before each
// shape, settle waits for the last shape's goroutines to exit, collects its
// garbage and hands the Go heap's free memory back to the OS. A shape with
// fixed total work brings the compute control (a WayShape with Control set)
// in with it, so that scaling can be judged against this machine's.
package bench
