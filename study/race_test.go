//go:build race

package study

// raceEnabled is true under the race detector, which
// slows the simulator about tenfold.
const raceEnabled = true
