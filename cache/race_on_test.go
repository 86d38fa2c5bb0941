//go:build race

package cache_test

// raceBuild is true in a race build, where the memory-figure tests are
// too slow for -short.
const raceBuild = true
