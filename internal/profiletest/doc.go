// Package profiletest tests offheap's allocation profiles by reading them
// with github.com/google/pprof/profile, the parser go tool pprof uses: a
// module of its own, so that the library module requires no more than it
// does.
package profiletest
