package sim

import (
	"math/rand/v2"
)

// part is one traffic of a run's mix: its arrivals, and the gateways they
// reach.
type part struct {
	tr    Traffic
	arr   *arrivals
	route *router    // Target 0: the run's routing
	gws   []int      // Target n: the n gateways it reaches
	rng   *rand.Rand // picks among gws
	next  int64      // its next arrival
}

// Streams of the parts after the first: 2 per part from streamParts on.
const streamParts = 100

// newPart builds traffic tr, the i-th of its run. The first part draws from
// the study's own streams, so that a run of one traffic of the zero shape
// makes exactly the decisions it always made.
func newPart(p Params, i int, tr Traffic) *part {
	arrStream, routeStream := uint64(streamArrivals), uint64(streamRouting)
	if i > 0 {
		arrStream, routeStream = streamParts+2*uint64(i), streamParts+2*uint64(i)+1
	}
	pt := &part{tr: tr, arr: newArrivals(rngFor(p.Seed, arrStream), tr, p.Limit, int64(p.Window))}
	if tr.Target > 0 {
		pt.rng = rngFor(p.Seed, routeStream)
		pt.gws = pt.rng.Perm(p.Gateways)[:tr.Target]
	} else {
		pt.route = newRouter(pcgFor(p.Seed, routeStream), p.Routing, p.Gateways)
	}
	pt.next = pt.draw()
	return pt
}

// draw returns the part's next arrival: its arrivals' own clock, which runs
// only while the part is on, moved to when the part starts and spread over
// its pulses.
func (pt *part) draw() int64 {
	var a int64
	if pt.arr.kind == PageLoad {
		a = pt.arr.next()
	} else {
		a = pt.arr.poisson() // the common case, without a call
	}
	if pt.tr.On > 0 {
		on, period := int64(pt.tr.On), int64(pt.tr.On+pt.tr.Off)
		a = a/on*period + a%on
	}
	return int64(pt.tr.Start) + a
}

// pick chooses the gateway of the part's next arrival.
func (pt *part) pick() int {
	if pt.gws != nil {
		return pt.gws[pt.rng.IntN(len(pt.gws))]
	}
	return pt.route.pick()
}

// setLive makes the routed parts reach the first k gateways; a targeted
// part's arrivals for a gateway past them go to the driver to remap.
func (m *mix) setLive(k int) {
	for _, pt := range m.parts {
		if pt.route != nil {
			pt.route.setK(k)
		}
	}
}

// mix merges its parts' arrivals in time order (ties to the earlier part).
type mix struct{ parts []*part }

func newMix(p Params) *mix {
	m := &mix{}
	for i, tr := range p.Mix() {
		m.parts = append(m.parts, newPart(p, i, tr))
	}
	return m
}

// next returns the next arrival of the run: its time, gateway and part.
func (m *mix) next() (t int64, g, c int) {
	for i, pt := range m.parts[1:] {
		if pt.next < m.parts[c].next {
			c = i + 1
		}
	}
	pt := m.parts[c]
	t = pt.next
	g = pt.pick()
	pt.next = pt.draw()
	return t, g, c
}

// bulkable reports whether the arrivals can be counted in bulk: one routed
// traffic, whose gateways are drawn where the design counts its rejections
// (counts) and otherwise skipped, which needs a fixed count of draws a pick.
func (m *mix) bulkable(counts bool) bool {
	pts := m.parts
	return len(pts) == 1 && pts[0].route != nil && (counts || pts[0].route.draws() >= 0)
}

// refuseBefore passes over the arrivals before end, telling rf each one's
// gateway where it counts them, and returns how many: their times are drawn
// as always; their gateways only where they are told, and otherwise skipped
// in the routing stream by a jump. Only for a bulkable mix.
func (m *mix) refuseBefore(end int64, rf *refusals) int {
	pt := m.parts[0]
	n := 0
	for pt.next < end {
		if rf.counts {
			rf.ref[pt.route.pick()].Refused(1)
		}
		pt.next = pt.draw()
		n++
	}
	if n > 0 && !rf.counts {
		pt.route.skip(n)
	}
	return n
}
