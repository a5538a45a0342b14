// Package memstore is fleetlimit's embedded store: the exact central state of
// rate-limited keys held in memory. It is the simulator's store and the live
// limiter's default, so it is a real store, not a test double.
//
// A Key is single-threaded and is handed the time on every call; the package
// never reads a clock, starts a goroutine, or does I/O.
package memstore
