package sim

import "math"

// skipper leaves out, in the eager mode, the syncs the lazy mode leaves out:
// the quiet ones (lazy) that are not, for a design whose view comes
// from the pull, the last before one of the gateway's arrivals. It reads
// the arrivals Δ ahead of each sync, so it has them drawn ahead. It asks a
// gateway once how many of its next syncs are quiet, and tells it those it
// left out (Skip) in one call before it next syncs or decides, as the lazy
// mode does; so a sync left out costs a few comparisons, and the round
// robin of syncs needs no scheduling.
type skipper struct {
	lz      []lazy
	pulls   bool
	t       []int64  // the arrivals' times
	g       []uint16 // and gateways
	ahead   int      // arrivals before it have been read
	last    []int64  // per gateway: its latest arrival read, -1 for none
	quiet   []int    // per gateway: its next syncs known to be quiet
	skipped []int    // per gateway: its syncs left out and not yet told
}

// canSkip reports whether the run's eager mode can leave quiet syncs out:
// its design is Lazy, its arrivals can be drawn ahead (Params.Shareable),
// and it has no flood, whose sure rejections (refusals) reach gateways in
// bulk, unseen. So a run that skips keeps no refusals: every arrival is
// decided, and the skipper is told of it first (touch).
func (r *runner) canSkip() bool {
	_, lazy := r.gws[0].(lazy)
	return lazy && !r.p.HasFlood() && r.p.Shareable()
}

// newSkipper returns the run's skipper, drawing its arrivals ahead if they
// are not yet (the same arrivals: TestRequestsMatchRun), or nil where it
// cannot skip: then every sync is performed.
func (r *runner) newSkipper() *skipper {
	if !r.canSkip() {
		return nil
	}
	src, ok := r.src.(*replay)
	if !ok {
		rq, err := DrawRequests(r.p)
		if err != nil {
			return nil // cannot happen for a valid, shareable run
		}
		src = &replay{rq: rq}
		r.src = src
	}
	k := len(r.gws)
	s := &skipper{lz: make([]lazy, k), t: src.rq.t, g: src.rq.g,
		last: make([]int64, k), quiet: make([]int, k), skipped: make([]int, k)}
	for i, gw := range r.gws {
		s.lz[i] = gw.(lazy)
		s.last[i] = -1
	}
	s.pulls = s.lz[0].PullsView()
	return s
}

// skips reports whether gateway g's sync at t may be left out, and if so
// counts it. Syncs come in time order; delta is Δ.
func (s *skipper) skips(t, delta int64, g int) bool {
	if s.pulls {
		// the last sync before an arrival at a is the one in (a-Δ, a]
		ts, gs, i := s.t, s.g, s.ahead
		for i < len(ts) && ts[i] < t+delta {
			s.last[gs[i]] = ts[i]
			i++
		}
		s.ahead = i
		if s.last[g] >= t {
			return false
		}
	}
	if s.quiet[g] == 0 {
		s.flush(g)
		if s.quiet[g] = s.lz[g].QuietSyncs(); s.quiet[g] == 0 {
			return false
		}
	}
	if s.quiet[g] != math.MaxInt {
		s.quiet[g]--
	}
	s.skipped[g]++
	return true
}

// touch readies gateway g to sync or decide: it is told the syncs left out,
// and asked again how many are quiet after.
func (s *skipper) touch(g int) {
	s.flush(g)
	s.quiet[g] = 0
}

// flush tells gateway g the syncs left out.
func (s *skipper) flush(g int) {
	if n := s.skipped[g]; n > 0 {
		s.lz[g].Skip(n)
		s.skipped[g] = 0
	}
}
