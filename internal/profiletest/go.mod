module github.com/offheap/offheap/internal/profiletest

go 1.26.0

require (
	github.com/google/pprof v0.0.0-20261105003125-4bf881d7fb0b
	github.com/offheap/offheap v0.0.0-00010101000000-000000000000
)

require golang.org/x/sys v0.50.0 // indirect

replace github.com/offheap/offheap => ../..
