package sim

import (
	"fmt"
	"time"

	"github.com/fleetlimit/fleetlimit/sim/catalog"
)

// Requests are a run's arrivals drawn ahead of it: their times, gateways and
// traffics. The arrivals do not depend on the design, the sync interval, the
// window's kind or the lease policy (each has its own random streams), so
// every run that differs from another only in those sees the very same
// requests; drawn once, they serve all of them (RunRequests), and each run
// makes exactly the decisions it makes when it draws them itself. Requests
// are read only once drawn: any number of runs may share them at once.
type Requests struct {
	key RequestsKey
	t   []int64
	g   []uint16 // gateways are below 4096 (Params.Validate)
	c   []uint16 // nil: a single traffic
}

// RequestsKey says which runs see the same requests: runs whose keys are
// equal can share their Requests.
type RequestsKey struct {
	Seed     uint64
	Mix      string // Params.MixString
	Limit    int
	Window   time.Duration
	Gateways int
	Routing  Routing
	Duration time.Duration
}

// MaxSharedRequests bounds the expected requests of a run whose arrivals
// may be drawn ahead: ten bytes each are held while its runs go on.
const MaxSharedRequests = 8 << 20

// Key is the RequestsKey of run p.
func (p Params) Key() RequestsKey {
	return RequestsKey{Seed: p.Seed, Mix: p.MixString(), Limit: p.Limit, Window: p.Window,
		Gateways: p.Gateways, Routing: p.Routing, Duration: p.Duration}
}

// Shareable reports whether run p's arrivals can be drawn ahead: its fleet
// keeps its size (a fleet that changes size reroutes its arrivals) and it
// expects no more than MaxSharedRequests.
func (p Params) Shareable() bool {
	return len(p.Faults.Members) == 0 && p.expected() <= MaxSharedRequests
}

// FleetFree reports whether run p's decisions do not depend on its fleet: a
// design that never syncs (catalog.Info.NoSync: every decision is the
// store's) on an ideal store, where only the arrivals' times matter, and
// those have their own random stream. Two such runs that differ only in
// Gateways, Sync, Routing and AlignedSync have equal Results but for their
// Params and their store counts (a window in counters holds an entry a
// bucket and gateway); when they differ only in Sync, their store counts
// are equal too.
func (p Params) FleetFree() bool {
	info, err := catalog.Lookup(p.Design)
	return err == nil && info.NoSync && !info.LocalState && !p.Faults.Active()
}

// SyncBlind reports whether run p's requests, decisions and figures do not
// depend on its Sync: FleetFree, or a design whose syncs only push
// (catalog.Info.PushOnly) on an ideal store. Two such runs that differ only
// in Sync have equal Results but for their Params, their Syncs
// (ScheduledSyncs) and their store counts, which follow the syncs.
func (p Params) SyncBlind() bool {
	info, err := catalog.Lookup(p.Design)
	return err == nil && (info.NoSync || info.PushOnly) && !p.Faults.Active()
}

// DrawRequests draws the arrivals of run p ahead of it.
func DrawRequests(p Params) (*Requests, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if !p.Shareable() {
		return nil, fmt.Errorf("run %v: its arrivals cannot be drawn ahead (a fleet that changes size, or more than %d requests expected)", p, MaxSharedRequests)
	}
	m, end := newMix(p), int64(p.Duration)
	n := int(p.expected()*1.01) + 64
	rq := &Requests{key: p.Key(), t: make([]int64, 0, n), g: make([]uint16, 0, n)}
	if len(m.parts) > 1 {
		rq.c = make([]uint16, 0, n)
	}
	for {
		t, g, c := m.next()
		if t >= end {
			return rq, nil
		}
		rq.t, rq.g = append(rq.t, t), append(rq.g, uint16(g))
		if rq.c != nil {
			rq.c = append(rq.c, uint16(c))
		}
	}
}

// NewRequests makes the arrivals of run p from a log (a replay): their
// times in ns from the run's start, ascending and before p.Duration, and
// their gateways, below p.Gateways. The slices become the Requests'.
func NewRequests(p Params, t []int64, g []uint16) (*Requests, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if len(t) != len(g) {
		return nil, fmt.Errorf("requests: %d times and %d gateways", len(t), len(g))
	}
	for i := range t {
		switch {
		case t[i] < 0 || t[i] >= int64(p.Duration):
			return nil, fmt.Errorf("requests: arrival %d at %v is outside the run's [0, %v)", i, time.Duration(t[i]), p.Duration)
		case i > 0 && t[i] < t[i-1]:
			return nil, fmt.Errorf("requests: arrival %d at %v comes before the one before it (%v)", i, time.Duration(t[i]), time.Duration(t[i-1]))
		case int(g[i]) >= p.Gateways:
			return nil, fmt.Errorf("requests: arrival %d at gateway %d of %d", i, g[i], p.Gateways)
		}
	}
	return &Requests{key: p.Key(), t: t, g: g}, nil
}

// RunRequestsTrace is RunRequests reporting every decision to trace (nil:
// none), whatever the number of requests.
func RunRequestsTrace(p Params, rq *Requests, trace Trace) (Result, error) {
	return runGiven(p, rq, trace, modeAuto)
}

// runGiven runs p in mode md on the requests rq, made for a run of p.
func runGiven(p Params, rq *Requests, trace Trace, md mode) (Result, error) {
	if rq == nil {
		return Result{}, fmt.Errorf("run %v: no requests given", p)
	}
	if p.Key() != rq.key {
		return Result{}, fmt.Errorf("run %v: the requests given were made for another run (%+v)", p, rq.key)
	}
	res, _, err := runOn(p, rq, trace, md)
	return res, err
}

// RunDecisions is RunRequestsTrace for a driver that reads only the
// decisions and the figures made of them (admits, rejections, round trips,
// worst windows, scheduled syncs): it performs no sync after the last
// arrival, since none can change a decision, and leaves out the quiet syncs
// of sparse arrivals whatever the design. The store's counts and the
// leases' figures of its Result stop at the last arrival.
func RunDecisions(p Params, rq *Requests, trace Trace) (Result, error) {
	return runGiven(p, rq, trace, modeDecisions)
}

// reached returns, for each of k gateways, whether a request reaches it.
func (rq *Requests) reached(k int) []bool {
	seen := make([]bool, k)
	for _, g := range rq.g {
		seen[g] = true
	}
	return seen
}

// Len is the number of requests.
func (rq *Requests) Len() int { return len(rq.t) }

// RunRequests runs p on arrivals drawn ahead for a run of the same key.
func RunRequests(p Params, rq *Requests) (Result, error) {
	if rq == nil {
		return Result{}, fmt.Errorf("run %v: no requests given", p)
	}
	if !p.Shareable() {
		return Result{}, fmt.Errorf("run %v: its arrivals cannot be drawn ahead (a fleet that changes size, or more than %d requests expected)", p, MaxSharedRequests)
	}
	if p.Key() != rq.key {
		return Result{}, fmt.Errorf("run %v: the requests given were drawn for another run (%+v)", p, rq.key)
	}
	res, _, err := runOn(p, rq, nil, modeAuto)
	return res, err
}

// replay is a run's source of arrivals drawn ahead.
type replay struct {
	rq *Requests
	i  int // the next
}

func (s *replay) next() (t int64, g, c int) {
	rq := s.rq
	if s.i == len(rq.t) {
		return never, 0, 0
	}
	i := s.i
	s.i++
	if rq.c != nil {
		c = int(rq.c[i])
	}
	return rq.t[i], int(rq.g[i]), c
}

// bulkable: any arrivals can be counted in bulk.
func (s *replay) bulkable(counts bool) bool { return true }

// refuseBefore passes over the arrivals before end, telling rf each one's
// gateway where it counts them, and returns how many.
func (s *replay) refuseBefore(end int64, rf *refusals) int {
	rq, i := s.rq, s.i
	j := i + gallop(rq.t[i:], end)
	if rf.counts {
		for _, g := range rq.g[i:j] {
			rf.ref[g].Refused(1)
		}
	}
	s.i = j
	return j - i
}

// setLive is never called: a run whose fleet changes size draws its own.
func (s *replay) setLive(k int) { panic("sim: a replay cannot follow a fleet that changes size") }

// gallop returns the number of times in ts, ascending, before end: a
// doubling search from the start, then a binary one, so that a short run of
// them costs little.
func gallop(ts []int64, end int64) int {
	lo, hi := 0, 1
	for hi <= len(ts) && ts[hi-1] < end {
		lo, hi = hi, 2*hi
	}
	hi = min(hi, len(ts))
	for lo < hi { // ts[lo-1] < end; the answer is in [lo, hi]
		m := int(uint(lo+hi) >> 1)
		if ts[m] < end {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}
