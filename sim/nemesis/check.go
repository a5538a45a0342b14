package nemesis

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/fleetlimit/fleetlimit/internal/design"
	"github.com/fleetlimit/fleetlimit/sim"
	"github.com/fleetlimit/fleetlimit/window"
)

// Violation is a window that held more than its bound, or a history that
// disagrees with the run's own count.
type Violation struct {
	Check string // "window" or "history"
	// At is the window's end, on the stamps' clock (ns from the start).
	At         int64
	Got, Bound int
	Detail     string
}

func (v Violation) String() string {
	if v.Check == "history" {
		return "history: " + v.Detail
	}
	return fmt.Sprintf("window ending at %.3fs holds %d admits, over its bound %d (%s)", float64(v.At)/1e9, v.Got, v.Bound, v.Detail)
}

// admit is one admit of the history.
type admit struct {
	stamp, at     int64 // its stamp; when it was told
	g             int
	asked, fallen bool
	slot          bool // a fallback's admit that spent a slot held
}

// history is one run's, as the checker reads it.
type history struct {
	p      sim.Params
	admits []admit   // by stamp
	pushes [][]int64 // per gateway, when the store applied its pushes
	heard  [][]int64 // per gateway, when the store read what it heard
	pulls  [][]int64 // heard, syncs only
	end    int64
	// late is the longest a store call took from its gateway's clock
	// reading to the store: a call that read its clock earlier than the
	// latest one the store saw counts a window the store has already
	// trimmed by the later clock.
	late int64
	// quietSyncs: the design's syncs push nothing (Bound.quietSyncs)
	quietSyncs bool
}

// Check runs p and checks its history: no window may hold more than the
// design's bound plus what the faults it meets add (Bounds, Terms). It
// returns the worst violation, if any, and the run's result.
func Check(p sim.Params) (*Violation, sim.Result, error) {
	b, err := boundOf(p.Design)
	if err != nil {
		return nil, sim.Result{}, err
	}
	return checkAs(p, b)
}

// checkAs is Check holding p's run to b.
func checkAs(p sim.Params, b Bound) (*Violation, sim.Result, error) {
	h := &history{p: p, end: int64(p.Duration), quietSyncs: b.quietSyncs}
	k := p.Gateways
	h.pushes, h.heard, h.pulls = make([][]int64, k), make([][]int64, k), make([][]int64, k)
	res, err := sim.RunHistory(p, h.take)
	if err != nil {
		return nil, res, err
	}
	for g := range k {
		slices.Sort(h.heard[g])
		slices.Sort(h.pulls[g])
	}
	slices.SortStableFunc(h.admits, func(x, y admit) int { return cmpInt(x.stamp, y.stamp) })
	if int64(len(h.admits)) != res.Admitted {
		return &Violation{Check: "history", Detail: fmt.Sprintf("%d admits in the history, %d counted by the run", len(h.admits), res.Admitted)}, res, nil
	}
	return h.check(b), res, nil
}

// take records one happening.
func (h *history) take(x sim.Happening) {
	switch x.Kind {
	case sim.Decided:
		h.late = max(h.late, x.At-x.Came)
		if x.Verdict == design.Admit {
			h.admits = append(h.admits, admit{x.Stamp, x.At, x.Gateway, x.Asked, x.Fallback, x.Slot})
		}
	case sim.Pushed:
		h.late = max(h.late, x.At-x.Came)
		if h.quietSyncs && !x.Asked {
			return
		}
		h.pushes[x.Gateway] = append(h.pushes[x.Gateway], x.At)
	case sim.Heard:
		h.heard[x.Gateway] = append(h.heard[x.Gateway], x.At)
		if !x.Asked {
			h.pulls[x.Gateway] = append(h.pulls[x.Gateway], x.At)
		}
	}
}

// term is one fault's part of a window's bound: it adds fixed, the
// window's admits that count (a prefix sum over admits by stamp), and the
// mean over the gateways of the window's admits each one's own counts
// count, rounded up, while the window's true span meets [from, to].
type term struct {
	name     string
	fixed    int
	counts   []int   // counts[i]: admits before the i-th that count
	each     [][]int // per gateway, as counts
	from, to int64
}

func (t term) in(lo, hi int) int {
	n := t.fixed
	if t.counts != nil {
		n += t.counts[hi] - t.counts[lo]
	}
	if len(t.each) > 0 {
		sum := 0
		for _, c := range t.each {
			sum += c[hi] - c[lo]
		}
		n += (sum + len(t.each) - 1) / len(t.each)
	}
	return n
}

// check holds every window to its bound and returns the worst excess.
func (h *history) check(b Bound) *Violation {
	base := b.limit(h.p.Limit, h.p.Gateways, h)
	terms := h.terms(b)
	skew := 2 * int64(h.p.Faults.Skew)
	w := int64(h.p.Window)
	var worst *Violation
	see := func(lo, hi int, end int64) { // admits [lo, hi) in the window ending at end
		n := hi - lo
		if n <= base {
			return
		}
		bound, detail := base, fmt.Sprintf("%s = %d", b.Formula, base)
		if span := skew + h.late; span > 0 {
			add := h.stampedIn(lo, hi, end-w, end-w+span)
			if h.p.WindowKind == window.Fixed { // a counter reset by a clock behind
				add += h.stampedIn(lo, hi, end-span-1, end-1)
			}
			bound += add
			detail += fmt.Sprintf(" + stamped in the window's first %v %d", time.Duration(span), add)
		}
		for _, t := range terms {
			// the window's admits came from end − W − skew on the true
			// clock, and were decided until late after end
			if end-w-skew <= t.to && end+h.late >= t.from {
				add := t.in(lo, hi)
				bound += add
				detail += fmt.Sprintf(" + %s %d", t.name, add)
			}
		}
		if n > bound && (worst == nil || n-bound > worst.Got-worst.Bound) {
			worst = &Violation{Check: "window", At: end, Got: n, Bound: bound, Detail: detail}
		}
	}
	if h.p.WindowKind == window.Fixed {
		for lo := 0; lo < len(h.admits); {
			start := h.admits[lo].stamp / w * w
			hi := lo
			for hi < len(h.admits) && h.admits[hi].stamp < start+w {
				hi++
			}
			see(lo, hi, start+w)
			lo = hi
		}
		return worst
	}
	lo := 0
	for i, a := range h.admits {
		for h.admits[lo].stamp <= a.stamp-w {
			lo++
		}
		see(lo, i+1, a.stamp)
	}
	return worst
}

// stampedIn counts the admits [lo, hi) stamped in (from, to].
func (h *history) stampedIn(lo, hi int, from, to int64) int {
	n := 0
	for _, a := range h.admits[lo:hi] {
		if a.stamp > from && a.stamp <= to {
			n++
		}
	}
	return n
}

// terms are the run's faults' terms.
func (h *history) terms(b Bound) []term {
	f, k := h.p.Faults, h.p.Gateways
	var ts []term
	for i, o := range f.Outages {
		t0, t1 := int64(o.At), int64(o.At+o.For)
		next := h.end
		if i+1 < len(f.Outages) {
			next = int64(f.Outages[i+1].At)
		}
		back := h.fallbackReached(t0, next, t1)
		each := make([][]int, k)
		for j := range k {
			c := h.lastContact(j, t0, back)
			each[j] = h.prefix(func(a admit) bool {
				if a.at >= t0 { // a slot granted before, which j may never have heard of
					return a.at <= back && (!a.fallen || a.slot) && !a.asked && a.g != j
				}
				return !h.known(a, c)
			})
		}
		ts = append(ts,
			term{name: "outage K − 1 + Ū", fixed: k - 1, each: each, from: t0, to: back},
			term{name: "outage B", counts: h.prefix(func(a admit) bool { return a.at >= t1 && a.at <= back }), from: t0, to: back})
	}
	for _, ft := range f.Forgets {
		at := int64(ft)
		found := h.reseeded(at)
		ts = append(ts, term{name: "forget K +", fixed: k, counts: h.prefix(func(a admit) bool { return a.at >= at && a.at <= found }), from: at, to: found},
			term{name: "forget, of lives ended before they re-seeded,", counts: h.prefix(func(a admit) bool { return a.at <= at && h.restartedIn(a.g, a.at, found) }), from: at, to: found})
	}
	for _, r := range f.Restarts {
		at := int64(r.At)
		lost := func(a admit) bool {
			return a.at <= at && (r.Gateway == sim.AllGateways || a.g == r.Gateway) &&
				(!b.storeDecides || !a.asked && !h.pushedIn(a.g, a.at, at))
		}
		fresh := b.freePerLife
		if r.Gateway == sim.AllGateways {
			fresh *= k
		}
		ts = append(ts, term{name: fmt.Sprintf("restart of %d", r.Gateway), fixed: fresh, counts: h.prefix(lost), from: at, to: at + int64(h.p.Window)})
	}
	return ts
}

// restartedIn reports whether gateway g restarted in (from, to]: an admit
// it made at from is then no history of the life that lives at to.
func (h *history) restartedIn(g int, from, to int64) bool {
	for _, r := range h.p.Faults.Restarts {
		if (r.Gateway == g || r.Gateway == sim.AllGateways) && int64(r.At) > from && int64(r.At) <= to {
			return true
		}
	}
	return false
}

// prefix is the prefix sum of ok over the admits by stamp.
func (h *history) prefix(ok func(admit) bool) []int {
	out := make([]int, len(h.admits)+1)
	for i, a := range h.admits {
		out[i+1] = out[i]
		if ok(a) {
			out[i+1]++
		}
	}
	return out
}

// lastContact is gateway g's last contact with the store before t, or
// math.MinInt64 if it had none, or restarted after it and before until (a
// new life knows nothing).
func (h *history) lastContact(g int, t, until int64) int64 {
	hs := h.heard[g]
	i, _ := slices.BinarySearch(hs, t)
	if i == 0 {
		return math.MinInt64
	}
	if c := hs[i-1]; !h.restartedIn(g, c, until) {
		return c
	}
	return math.MinInt64
}

// known reports whether every gateway had heard of admit a by its last
// contact, all of which came at or after c: the store decided it before c,
// or its gateway pushed it before c.
func (h *history) known(a admit, c int64) bool {
	return a.at <= c && (a.asked || h.pushedIn(a.g, a.at, c))
}

// pushedIn reports whether gateway g's push reached the store in (from, to].
func (h *history) pushedIn(g int, from, to int64) bool {
	ps := h.pushes[g]
	i, _ := slices.BinarySearch(ps, from+1)
	return i < len(ps) && ps[i] <= to
}

// firstPushFrom is gateway g's first push at or after t (h.end if none).
func (h *history) firstPushFrom(g int, t int64) int64 {
	ps := h.pushes[g]
	if i, _ := slices.BinarySearch(ps, t); i < len(ps) {
		return ps[i]
	}
	return h.end
}

// fallbackReached is when every fallback admit made in [t0, next) had
// reached the store, and at least t1.
func (h *history) fallbackReached(t0, next, t1 int64) int64 {
	last := make([]int64, h.p.Gateways)
	for i := range last {
		last[i] = -1
	}
	for _, a := range h.admits {
		if a.fallen && a.at >= t0 && a.at < next {
			last[a.g] = max(last[a.g], a.at)
		}
	}
	out := t1
	for g, l := range last {
		if l >= 0 {
			out = max(out, h.firstPushFrom(g, l+1))
		}
	}
	return out
}

// reseeded is when every gateway that admitted in the window before at had
// found a loss at at and pushed its history again: its second push at or
// after its first contact after at.
func (h *history) reseeded(at int64) int64 {
	out := at
	w := int64(h.p.Window) + 2*int64(h.p.Faults.Skew)
	for g := range h.p.Gateways {
		admitted := slices.ContainsFunc(h.admits, func(a admit) bool { return a.g == g && a.at > at-w && a.at <= at })
		if !admitted {
			continue
		}
		hs := h.heard[g]
		i, _ := slices.BinarySearch(hs, at)
		if i == len(hs) {
			return h.end
		}
		first := h.firstPushFrom(g, hs[i])
		if first == h.end {
			return h.end
		}
		out = max(out, h.firstPushFrom(g, first+1))
	}
	return out
}

// budgets is Σ_j B_j: for each gateway the most it admitted alone (neither
// asked nor fallen back) between two of its pulls.
func (h *history) budgets() int {
	sum := 0
	for g := range h.p.Gateways {
		ps := h.pulls[g]
		most, cur, j := 0, 0, 0
		for _, a := range h.admitsByTime(g) {
			for j < len(ps) && ps[j] < a.at {
				j++
				cur = 0
			}
			if !a.asked && !a.fallen {
				cur++
				most = max(most, cur)
			}
		}
		sum += most
	}
	return sum
}

// admitsByTime are gateway g's admits in the order they were made.
func (h *history) admitsByTime(g int) []admit {
	var out []admit
	for _, a := range h.admits {
		if a.g == g {
			out = append(out, a)
		}
	}
	slices.SortStableFunc(out, func(x, y admit) int { return cmpInt(x.at, y.at) })
	return out
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
