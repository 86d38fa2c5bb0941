//go:build offheapchecked

package offheap

// buildChecked is true under the offheapchecked build tag: every heap, the
// default heap included, runs in checked mode.
const buildChecked = true
