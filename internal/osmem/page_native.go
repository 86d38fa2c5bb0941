//go:build !offheappage16k && !offheappage64k

package osmem

// simPage is the page size a build tag simulates (page_sim16k.go,
// page_sim64k.go); 0 in a plain build, which sees the system's own.
const simPage = 0
