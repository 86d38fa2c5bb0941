//go:build offheapchecked

package cache_test

// checkedBuild is true in a build with the offheapchecked tag, whose heaps
// keep freed blocks in quarantine and never relocate into denser spans: the
// memory figures do not apply there.
const checkedBuild = true
