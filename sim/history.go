package sim

import "github.com/fleetlimit/fleetlimit/internal/design"

// Happening is one entry of a run's history (RunHistory): a decision, a
// push the store applied, or a gateway hearing from the store.
type Happening struct {
	Kind HappeningKind
	// At is when it happened on the true clock (ns from the run's start):
	// a decision when its answer was given, a push when the store applied
	// it, a hearing when the store read what the gateway heard.
	At      int64
	Gateway int
	// Decided: Stamp is the instant its admit counts at, the deciding
	// gateway's clock when the request came (what the store compares);
	// Came, when it came on the true clock (Pushed: the gateway's clock
	// and the true time when it sent the push); Asked, that the store's
	// check decided it and counted it (a central or a counter query); Fallback, that the
	// fallback did (the store down, or the call failed). Heard: Asked,
	// that it was an answer rather than a sync's pull; Pushed: that a
	// query carried it rather than a sync.
	Stamp    int64
	Came     int64
	Verdict  design.Verdict
	Asked    bool
	Fallback bool
	// Slot, for a fallback's admit, is that it spent a lease slot the
	// gateway held: the store granted it before it went away.
	Slot bool
}

// HappeningKind is what a Happening is.
type HappeningKind uint8

// The kinds of Happening.
const (
	Decided HappeningKind = iota // a request decided
	Pushed                       // a push applied by the store: a sync's, or one a query carried
	Heard                        // a gateway heard the store's count: a pull, or a central or counter answer
)

// History receives a run's happenings in the order they happen.
type History func(Happening)

// RunHistory runs p on the fault engine, even with no fault set (its
// decisions are the same as the other engines' on a run without faults),
// and hands every happening to h.
func RunHistory(p Params, h History) (Result, error) {
	r, err := newRunner(p, nil, nil, nil)
	if err != nil {
		return Result{}, err
	}
	r.history = h
	r.execute(modeFaulty)
	return r.m.result(r.end), nil
}
