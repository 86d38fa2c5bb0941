//go:build !offheapchecked

package cache_test

// checkedBuild is true in a build with the offheapchecked tag.
const checkedBuild = false
