//go:build race

package study

// raceEnabled shrinks the heaviest reruns under the race detector, which
// slows the simulator about tenfold; the checks themselves stay the same.
const raceEnabled = true
