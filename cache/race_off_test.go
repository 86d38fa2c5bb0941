//go:build !race

package cache_test

// raceBuild is true in a race build.
const raceBuild = false
