//go:build race

package nemesis

// raceEnabled shrinks the heaviest sweeps under the race detector, which
// slows the simulator about tenfold; the checks themselves stay the same.
const raceEnabled = true
