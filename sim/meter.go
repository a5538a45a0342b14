package sim

import (
	"math"
	"time"

	"github.com/fleetlimit/fleetlimit/internal/design"
)

// meter counts what a run does.
type meter struct {
	p      Params
	w      int64
	leases bool

	requests, admitted, rejected, roundTrips, syncs int64
	fallbacks                                       int64 // requests the fallback decided (outages)
	performed                                       int64 // syncs actually run (the lazy mode skips quiet ones)
	admittedAfter                                   int64 // admits at t >= W

	// the worst sliding window: the most admits any (t-W, t] held, and
	// the last admit times, a ring longer than worst+1 indexed by the
	// admit's number; with an attack, the admits inside the last W, a
	// deque, as the attack's window needs each window's count
	worst   int
	ring    []int64
	admits  int64
	win     []int64
	winHead int

	// the fixed window [fixedLo, fixedHi) of the last admit, its count, and
	// the most any fixed window held
	fixedLo, fixedHi, fixedCount, worstFixed int64

	store StoreCounts // what the store carried

	heldTotal int64 // lease slots held unused, fleet-wide
	heldAt    int64
	heldArea  float64

	// with several traffics or a flood that starts late: each traffic's
	// requests and rejections before and from attack, the first late
	// flood's start, and the worst window holding it
	parts       []partCount
	attack      int64 // 0: no flood starts late
	worstAttack int
}

// partCount is one traffic's counts, before the attack and from it.
type partCount struct{ before, during [2]int64 } // {requests, rejected}

func newMeter(p Params, leases bool) *meter {
	m := &meter{p: p, w: int64(p.Window), leases: leases, fixedHi: -1}
	mix := p.Mix()
	for _, t := range mix {
		if t.Kind == Flood && t.Start > 0 && (m.attack == 0 || int64(t.Start) < m.attack) {
			m.attack = int64(t.Start)
		}
	}
	if len(mix) > 1 || m.attack > 0 {
		m.parts = make([]partCount, len(mix))
	}
	return m
}

// storeCall meters one call on the store: stamps pushed and pulled, and
// the entries it holds afterwards.
func (m *meter) storeCall(pushed, pulled, entries int) {
	m.store.PushedStamps += int64(pushed)
	m.store.PulledStamps += int64(pulled)
	m.store.PeakEntries = max(m.store.PeakEntries, int64(entries))
}

func (m *meter) held(t int64, delta int) {
	if delta == 0 {
		return
	}
	m.heldArea += float64(m.heldTotal) * float64(t-m.heldAt)
	m.heldAt = t
	m.heldTotal += int64(delta)
}

// rejectedN records n requests rejected in a run of one traffic and no
// attack (m.parts nil), whose times do not matter.
func (m *meter) rejectedN(n int) {
	m.requests += int64(n)
	m.rejected += int64(n)
}

func (m *meter) record(t int64, v design.Verdict, c int) {
	m.requests++
	if m.parts != nil {
		pc := &m.parts[c].during
		if t < m.attack {
			pc = &m.parts[c].before
		}
		pc[0]++
		if v != design.Admit {
			pc[1]++
		}
	}
	if v != design.Admit {
		m.rejected++
		return
	}
	m.admitted++
	if t >= m.w {
		m.admittedAfter++
	}
	if m.attack > 0 {
		m.slideCounting(t)
	} else {
		m.slide(t)
	}
	// worst fixed window
	if t >= m.fixedHi || t < m.fixedLo {
		m.fixedLo = t / m.w * m.w
		m.fixedHi, m.fixedCount = m.fixedLo+m.w, 0
	}
	m.fixedCount++
	m.worstFixed = max(m.worstFixed, m.fixedCount)
}

// slide takes an admit at t into the worst sliding window. The window
// (t-W, t] ending at it holds worst+1 admits exactly when the admit worst
// places back is in it, and never more, as it holds at most one more than
// the window of the admit before; so one comparison a request keeps worst.
func (m *meter) slide(t int64) {
	if m.worst+1 > len(m.ring) {
		m.growRing()
	}
	mask := int64(len(m.ring) - 1)
	a := m.admits
	m.ring[a&mask] = t
	m.admits++
	if back := a - int64(m.worst); back >= 0 && m.ring[back&mask] > t-m.w {
		m.worst++
	}
}

// growRing doubles the ring (at least 64), keeping its admits in place.
func (m *meter) growRing() {
	ring := make([]int64, max(64, 2*len(m.ring)))
	for a := max(0, m.admits-int64(len(m.ring))); a < m.admits; a++ {
		ring[a&int64(len(ring)-1)] = m.ring[a&int64(len(m.ring)-1)]
	}
	m.ring = ring
}

// slideCounting is slide for a run with an attack: it counts every
// window's admits, for the worst window that holds the attack's start.
func (m *meter) slideCounting(t int64) {
	lo := t - m.w
	for m.winHead < len(m.win) && m.win[m.winHead] <= lo {
		m.winHead++
	}
	if m.winHead >= 64 && m.winHead*2 >= len(m.win) {
		n := copy(m.win, m.win[m.winHead:])
		m.win, m.winHead = m.win[:n], 0
	}
	m.win = append(m.win, t)
	n := len(m.win) - m.winHead
	m.worst = max(m.worst, n)
	if t >= m.attack && t < m.attack+m.w { // a window (t-W, t] that holds the attack's start
		m.worstAttack = max(m.worstAttack, n)
	}
}

func (m *meter) result(end int64) Result {
	m.heldArea += float64(m.heldTotal) * float64(end-m.heldAt)
	l := float64(m.p.Limit)
	r := Result{
		Params:     m.p,
		Requests:   m.requests,
		Admitted:   m.admitted,
		Rejected:   m.rejected,
		RoundTrips: m.roundTrips,
		Fallbacks:  m.fallbacks,
		Syncs:      m.syncs,
		Store:      m.store,
		Figures: Figures{
			AdmittedX:         float64(m.admittedAfter) / (float64(end-m.w) / float64(m.w)) / l,
			WorstWindowX:      float64(m.worst) / l,
			WorstFixedWindowX: float64(m.worstFixed) / l,
			StrandedX:         m.heldArea / float64(end) / l,
		},
	}
	if m.requests > 0 {
		r.RejectedPct = 100 * float64(m.rejected) / float64(m.requests)
		r.RoundTripPct = 100 * float64(m.roundTrips) / float64(m.requests)
	}
	if m.attack > 0 {
		r.AttackStart = time.Duration(m.attack)
		r.AttackWindowX = float64(m.worstAttack) / l
	}
	for i, pc := range m.parts {
		r.Parts = append(r.Parts, PartResult{Traffic: m.p.Mix()[i].String(),
			Before: Counts{pc.before[0], pc.before[1]}, During: Counts{pc.during[0], pc.during[1]}})
	}
	if len(r.Parts) > 0 {
		r.FirstBeforePct = zeroNaN(r.Parts[0].Before.RejectedPct())
		r.FirstAfterPct = zeroNaN(r.Parts[0].During.RejectedPct())
	}
	return r
}

// zeroNaN is x, or 0 for NaN (a share of no requests).
func zeroNaN(x float64) float64 {
	if math.IsNaN(x) {
		return 0
	}
	return x
}
