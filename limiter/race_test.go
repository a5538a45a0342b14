//go:build race

package limiter

// raceEnabled is true under the race detector, which slows a test tenfold:
// the tests at full scale leave their runs to the run without it.
const raceEnabled = true
