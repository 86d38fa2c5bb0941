//go:build race || offheapchecked

package cache

// lockFreeBuild is false in a race build, whose detector would report the
// lock-free reads as the races they are by design, and in a checked build,
// whose heap may make freed memory inaccessible.
const lockFreeBuild = false
