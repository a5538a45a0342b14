// Package store defines the messages a gateway exchanges with the central
// store for one key: the sync (push what I admitted, pull what the fleet has
// admitted, return and ask for lease slots), the central check, and the lease
// grant. The embedded store (memstore) and the Redis store speak exactly
// these messages, so a design never knows which one answers it.
//
// The package holds types only; it never reads a clock or does I/O.
package store

// Push is what a gateway sends the store at a sync.
type Push struct {
	// Gateway is the index of the sending gateway, 0 <= Gateway < K.
	Gateway int
	// Admits are the timestamps this gateway admitted since its last sync,
	// in non-decreasing order. The store copies them; the slice stays the
	// gateway's.
	Admits []int64
	// Return is the number of granted slots handed back unused (leases).
	Return int
	// Ask is the number of slots asked for the next interval (leases).
	Ask int
	// Horizon is how far ahead, in nanoseconds, the gateway wants to know
	// which stamps leave the window (see Pull.Expiring); 0 asks for none.
	Horizon int64
}

// Pull is the store's answer to a Push.
type Pull struct {
	// Count is the number of admitted timestamps inside the window at the
	// sync, including the ones just pushed.
	Count int
	// Own is how many of Count were admitted by the pushing gateway.
	Own int
	// Expiring are the stamps counted in Count that leave the window
	// before now+Horizon, ascending. It is read-only and valid only until
	// the next call on the same key: a gateway that keeps it copies it.
	Expiring []int64
	// Granted is the number of lease slots granted until the next sync.
	Granted int
}
