//go:build race

package main

// raceEnabled is true under the race detector, whose shadow memory makes a
// child process's RSS no measure of serve's: the tests that measure it
// leave it to the run without the detector.
const raceEnabled = true
