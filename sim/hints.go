package sim

// The interfaces below are the simulator's shortcuts: a design's
// gateway that implements one lets the simulator leave out work whose
// outcome it knows, exactly.

// lazy is implemented by designs whose syncs can be left out, exactly, while
// they would change nothing. The simulator uses it to skip the syncs of idle
// gateways; the live limiter to leave quiet keys out of a sync.
type lazy interface {
	// QuietSyncs returns how many of this gateway's next syncs would
	// change nothing in the store or in the gateway (beyond what Skip
	// reproduces), provided no request reaches it meanwhile: 0 when the
	// next sync matters, math.MaxInt when none would.
	QuietSyncs() int
	// Skip accounts for n quiet syncs that were left out.
	Skip(n int)
	// PullsView reports whether a sync refreshes the gateway's view of
	// the store even when quiet: then the driver must still perform the
	// last sync before each decision.
	PullsView() bool
}

// refuser is implemented by designs that can tell how long they will go on
// rejecting, and whose rejections change at most a count of arrivals: a
// driver may then reject, without calling Decide, every unit request that
// comes before that time, and tell the design how many it rejected. The
// simulator uses it to count a flood's sure rejections in bulk.
type refuser interface {
	// RefusesUntil returns a time u such that, if the gateway neither
	// syncs nor admits meanwhile, Decide(t, 1) rejects for every t in
	// [now, u) and changes nothing that Refused does not; u <= now when
	// Decide(now, 1) would not reject.
	RefusesUntil(now int64) int64
	// Refused accounts for n unit requests the driver rejected in such a
	// time without calling Decide: it does what their Decide calls would
	// have done.
	Refused(n int)
	// CountsRefusals reports whether Refused does anything: when not, a
	// driver need not know which gateway a refused request reached.
	CountsRefusals() bool
}

// quietWhenFull is implemented by lease designs whose syncs, while the store
// has no room left (its admits in the window and the slots outstanding make
// the limit), would only hand back and regrant the same slots. The
// simulator uses it to skip the syncs of idle gateways in a contended fleet.
type quietWhenFull interface {
	// QuietWhenFull returns how many of this gateway's next syncs would
	// change nothing beyond what lazy.Skip reproduces, provided no
	// request reaches it meanwhile and the store has no room at each:
	// 0 when the next one matters, math.MaxInt when none would.
	QuietWhenFull() int
}

// rateLazy is implemented by designs whose syncs ask the store for a rate
// (Doorman's): a sync asking what the last one asked, and pushing nothing,
// is granted what the last one was while no gateway's want or rate has
// changed since (memstore.Key.RateVersion). The simulator's lazy mode,
// which sees every sync, leaves those out.
type rateLazy interface {
	// QuietWhileRatesHold is lazy.QuietSyncs provided also that no
	// gateway's want or rate changes meanwhile.
	QuietWhileRatesHold() int
	Skip(n int)
	PullsView() bool
}
