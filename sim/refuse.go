package sim

import (
	"math"
)

// refusals lets the eager mode reject a flood's requests without asking the
// design, for designs that can tell how long they will go on rejecting
// (refuser). It keeps, per gateway, the time before which every
// request there is surely rejected; syncs and decisions renew it. When
// every gateway is sure to reject until the next sync, the arrivals before
// it are counted in bulk (source.refuseBefore). Either way the run makes exactly
// the decisions it makes without (TestRefusalsMatchPlain).
type refusals struct {
	r     *runner
	ref   []refuser
	until []int64 // per gateway: requests before it are rejected
	least int64   // the least of until, when fresh
	fresh bool
	bulk  bool // arrivals can be counted in bulk
	// counts: the design counts the requests it rejects, so each refused
	// request is told to its gateway (and in bulk, its gateway is drawn)
	counts bool
}

// newRefusals returns the run's refusals, or nil where they cannot help: a
// design that is no Refuser, or a run with no flood.
func (r *runner) newRefusals() *refusals {
	if _, ok := r.gws[0].(refuser); !ok || !r.p.HasFlood() {
		return nil
	}
	rf := &refusals{r: r, ref: make([]refuser, len(r.gws)), until: make([]int64, len(r.gws))}
	for i, gw := range r.gws {
		rf.ref[i] = gw.(refuser)
	}
	// In bulk a request's gateway is drawn only for a design that counts
	// its rejections, so otherwise the routing must draw a fixed count per
	// pick; and nothing may want each request told.
	rf.counts = rf.ref[0].CountsRefusals()
	rf.bulk = r.src.bulkable(rf.counts) && r.m.parts == nil && r.trace == nil
	return rf
}

// refused tells gateway g it rejected a request without Decide.
func (rf *refusals) refused(g int) {
	if rf.counts {
		rf.ref[g].Refused(1)
	}
}

// renew notes gateway g's state after a decision or a sync at t.
func (rf *refusals) renew(t int64, g int) {
	old, u := rf.until[g], rf.ref[g].RefusesUntil(t)
	rf.until[g] = u
	switch {
	case !rf.fresh:
	case u < rf.least:
		rf.least = u
	case old == rf.least && u > old:
		rf.fresh = false
	}
}

// sure reports whether the request at t at gateway g is surely rejected.
func (rf *refusals) sure(t int64, g int) bool { return t < rf.until[g] }

// inBulk counts as rejected the arrivals before next (the next sync) that
// every gateway surely rejects.
func (rf *refusals) inBulk(next int64) {
	if !rf.fresh {
		rf.least = math.MaxInt64
		for _, u := range rf.until[:rf.r.p.Gateways] {
			rf.least = min(rf.least, u)
		}
		rf.fresh = true
	}
	if n := rf.r.src.refuseBefore(min(rf.least, next, rf.r.end), rf); n > 0 {
		rf.r.m.rejectedN(n)
	}
}
