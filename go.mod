module github.com/offheap/offheap

go 1.26.0

require (
	github.com/creack/pty v1.1.24
	golang.org/x/sys v0.50.0
	golang.org/x/term v0.48.0
)
