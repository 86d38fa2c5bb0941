//go:build offheappage16k && !offheappage64k

package osmem

// simPage: with the build tag offheappage16k the heap sees a kernel with
// 16 KiB pages.
const simPage = 16 << 10
