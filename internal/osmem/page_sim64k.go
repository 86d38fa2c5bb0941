//go:build offheappage64k

package osmem

// simPage: with the build tag offheappage64k the heap sees a kernel with
// 64 KiB pages.
const simPage = 64 << 10
