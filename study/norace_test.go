//go:build !race

package study

const raceEnabled = false
