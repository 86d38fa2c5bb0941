//go:build race

package arms

// raceBuild reports a race-detector build, in which the pin-floor arm is
// unavailable (pinfloor.go).
const raceBuild = true
