package offheap

// The words the heap's panics and errors share: each message leads with its
// cause and ends with the way out, and the phrases that several paths use
// are written here once, so that they say the same thing wherever they
// appear.

import "fmt"

// count is n and what it counts, in the plural unless n is 1.
func count(n int, what string) string { return fmt.Sprintf("%d %s", n, plural(n, what)) }

// plural is what, in the plural unless n is 1.
func plural(n int, what string) string {
	if n == 1 {
		return what
	}
	return what + "s"
}

// arenaFree is what Free panics with for an address of an Arena's memory.
func arenaFree(a uintptr) string {
	return fmt.Sprintf("offheap: Free of %#x, which belongs to an Arena: an arena's memory is freed all at once, by the arena's Reset or Release", a)
}

// refHint ends the messages of a refused Ref.
const refHint = ": a Ref is of a slice Alloc returned, or a prefix of one (not b[i:], Arena memory or Shared's bytes)"

// appendMoved is the way out of a Free of an address this heap does not
// own: another heap's block, or Go memory, which append makes of a full
// off-heap slice.
const appendMoved = "free a block through the heap that allocated it, and grow one with Realloc, " +
	"not append (append copies a full off-heap slice to the Go heap)"

// checkedStacks is the way out of a refusal that a block's history would
// explain.
const checkedStacks = "Options.Checked, or the offheapchecked build tag, reports where each block was allocated and freed"

// blockStartOnly is the way out of a refusal of an address inside a block,
// after "pass Free" or the like.
const blockStartOnly = "the slice Alloc returned, or a prefix of it (b[:k]); b[i:] starts no block"
