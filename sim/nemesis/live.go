package nemesis

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// A live history is what the clients of a running fleet saw: each
// decision's key, gateway, when it was sent and when it was answered, and
// the faults the harness applied, with when. A gateway's stamp, its clock
// when the request came, lies between the two, so the checker counts an
// admit in a window only when its whole call fell inside it: the count is
// at most the window's true one, and a busy machine's latency cannot make a
// violation, only hide one. The terms are docs/design.md's, each bounded
// by what a client sees (LiveTerms): looser than the simulator's, which
// reads every push and pull.

// LiveDecision is one decision a client was told.
type LiveDecision struct {
	Key      string
	Gateway  int
	Sent     time.Duration // since the run began
	Answered time.Duration
	Admitted bool
}

// LiveKind is the kind of a live fault.
type LiveKind string

// The live faults.
const (
	// LiveOutage: the store answered nothing in time from From to To
	// (Redis paused, killed, or behind a delay past the call timeout).
	LiveOutage LiveKind = "outage"
	// LiveForget: the store lost every key at From (FLUSHALL, or a restart
	// without persistence, at the end of the outage it made).
	LiveForget LiveKind = "forget"
	// LiveRestart: gateway Gateway was killed (SIGKILL) at From and started
	// again, without its state, at To.
	LiveRestart LiveKind = "restart"
	// LiveSlow: store calls took up to Delay longer from From to To.
	LiveSlow LiveKind = "slow"
)

// LiveFault is one fault the harness applied.
type LiveFault struct {
	Kind     LiveKind
	From, To time.Duration
	Gateway  int           // LiveRestart's
	Delay    time.Duration // LiveSlow's
}

func (f LiveFault) String() string {
	switch f.Kind {
	case LiveRestart:
		return fmt.Sprintf("%s of gateway %d %.1fs–%.1fs", f.Kind, f.Gateway, f.From.Seconds(), f.To.Seconds())
	case LiveSlow:
		return fmt.Sprintf("%s by %v %.1fs–%.1fs", f.Kind, f.Delay, f.From.Seconds(), f.To.Seconds())
	case LiveForget:
		return fmt.Sprintf("%s at %.1fs", f.Kind, f.From.Seconds())
	}
	return fmt.Sprintf("%s %.1fs–%.1fs", f.Kind, f.From.Seconds(), f.To.Seconds())
}

// LiveRun is one live history and the fleet's parameters.
type LiveRun struct {
	Design   string
	Limit    int           // L, a sliding window's
	Window   time.Duration // W
	Gateways int           // K
	Sync     time.Duration // Δ
	// Slack is how late a gateway's timer may fire on a loaded machine: a
	// sync meant at Δ comes by Δ + Slack (it widens the terms' spans).
	Slack     time.Duration
	Decisions []LiveDecision
	Faults    []LiveFault
}

// LiveViolation is a window of one key that held more admits than its
// allowance.
type LiveViolation struct {
	Key        string
	From       time.Duration // the window's start
	Got, Bound int
	Terms      string // what the allowance is made of
}

func (v LiveViolation) String() string {
	return fmt.Sprintf("key %s: the window from %.3fs holds %d admits, over its bound %d (%s)",
		v.Key, v.From.Seconds(), v.Got, v.Bound, v.Terms)
}

// LiveTerms are what each live fault adds to a window that meets its span,
// as a client can bound them (the simulator's Terms read pushes and pulls,
// which a client does not see); docs/nemesis.md tables them.
var LiveTerms = []struct{ Fault, Adds, Span string }{
	{"store unreachable from t0 to t1 (Redis paused, killed, or slower than the call timeout)",
		"K − 1 + U + B: U the window's admits from t0 − 2(Δ + ε) (what a gateway may not have heard of at its last sync) until t0 + W (slots granted before t0 spent after it), at most the design's bound; B the window's admits in the 2(Δ + ε) + 0.5 s after t1 (until every fallback admit reached the store). A window wholly inside [t0 + W + ε, t1] holds at most L + K − 1, each gateway's fallback share of an empty view, and nothing else",
		"t0 until t1 + 2(Δ + ε) + 0.5 s"},
	{"store forgets every key at f (FLUSHALL, a restart without persistence)",
		"K + the window's admits in [f, f + Δ + 2ε] (until every gateway found the loss and pushed its history again) + the window's admits, before f, of gateways that were killed in the window",
		"f until f + Δ + 2ε"},
	{"gateway g killed at r, started again without its state",
		"the window's admits of g before r (its new life has heard of none of them)",
		"r until r + W"},
	{"every window (round trips, slow store calls, paused processes)",
		"the window's admits in its first D + ε, D the longest call a client saw in it or the store delay then: a store trims its window by the latest clock it has seen, so a call that read its clock earlier counts a window already trimmed",
		"every window"},
}

// LiveMarkdown is LiveTerms as docs/nemesis.md tables them.
func LiveMarkdown() string {
	var b strings.Builder
	b.WriteString("| live fault | adds to a window's bound | while the window meets |\n|---|---|---|\n")
	for _, t := range LiveTerms {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", t.Fault, t.Adds, t.Span)
	}
	return b.String()
}

// CheckLive holds every window of every key of r to the design's bound
// plus the terms of the faults it meets (Bounds, LiveTerms). It returns the
// worst violation of each key that has one, worst first.
func CheckLive(r LiveRun) ([]LiveViolation, error) {
	b, err := boundOf(r.Design)
	if err != nil {
		return nil, err
	}
	if b.Design == "headroom" {
		return nil, fmt.Errorf("nemesis: headroom's bound names its gateways' budgets, which clients cannot see; the live check does not hold it")
	}
	if b.Design == "central-counter" {
		return nil, fmt.Errorf("nemesis: central-counter counts fixed windows; the live check holds sliding ones")
	}
	if r.Limit < 1 || r.Gateways < 1 || r.Window <= 0 || r.Sync <= 0 || r.Slack < 0 {
		return nil, fmt.Errorf("nemesis: a live run needs L, K, W and Δ positive and a slack of 0 or more")
	}
	byKey := map[string][]LiveDecision{}
	for _, d := range r.Decisions {
		if d.Gateway < 0 || d.Gateway >= r.Gateways || d.Answered < d.Sent {
			return nil, fmt.Errorf("nemesis: decision %+v: a gateway of 0 to %d, answered after sent", d, r.Gateways-1)
		}
		if d.Admitted {
			byKey[d.Key] = append(byKey[d.Key], d)
		}
	}
	r.Faults = mergeOutages(r.Faults)
	lc := liveCheck{r: r, base: b.limit(r.Limit, r.Gateways, nil)}
	var out []LiveViolation
	for key, as := range byKey {
		slices.SortFunc(as, func(x, y LiveDecision) int { return int(x.Sent - y.Sent) })
		if v := lc.key(key, as); v != nil {
			out = append(out, *v)
		}
	}
	slices.SortFunc(out, func(x, y LiveViolation) int {
		if d := (y.Got - y.Bound) - (x.Got - x.Bound); d != 0 {
			return d
		}
		return strings.Compare(x.Key, y.Key)
	})
	return out, nil
}

// liveCheck is CheckLive's state for one run.
type liveCheck struct {
	r    LiveRun
	base int
}

// key returns the worst window of one key's admits (by Sent), if any is
// over its allowance.
func (c liveCheck) key(key string, as []LiveDecision) *LiveViolation {
	var worst *LiveViolation
	for i := range as {
		from, to := as[i].Sent, as[i].Sent+c.r.Window
		var in []LiveDecision
		for _, a := range as[i:] {
			if a.Sent >= to {
				break
			}
			if a.Answered < to {
				in = append(in, a)
			}
		}
		bound, terms := c.allowance(from, to, in)
		if len(in) > bound && (worst == nil || len(in)-bound > worst.Got-worst.Bound) {
			worst = &LiveViolation{Key: key, From: from, Got: len(in), Bound: bound, Terms: terms}
		}
	}
	return worst
}

// allowance is the most the window [from, to) may hold, given the admits
// counted in it, and what it is made of.
func (c liveCheck) allowance(from, to time.Duration, in []LiveDecision) (int, string) {
	r := c.r
	eps, k := r.Slack, r.Gateways
	core, coreWhy := c.base, fmt.Sprintf("bound %d", c.base)
	var parts []string
	extra := 0
	add := func(n int, why string) {
		if n > 0 {
			extra += n
			parts = append(parts, fmt.Sprintf("%s %d", why, n))
		}
	}
	count := func(lo, hi time.Duration, ok func(LiveDecision) bool) int {
		n := 0
		for _, a := range in {
			if a.Sent >= lo && a.Sent < hi && (ok == nil || ok(a)) {
				n++
			}
		}
		return n
	}
	meets := func(lo, hi time.Duration) bool { return from <= hi && lo < to }
	late := eps + longest(in)
	for _, f := range r.Faults {
		switch f.Kind {
		case LiveOutage:
			back := f.To + 2*(r.Sync+eps) + 500*time.Millisecond
			if !meets(f.From, back) {
				continue
			}
			if from >= f.From+r.Window+eps && to <= f.To {
				core = r.Limit + k - 1 // the fallback alone: each gateway's share of an empty view
				coreWhy = fmt.Sprintf("L + K − 1 = %d inside the outage %s", core, f)
				continue
			}
			u := min(count(f.From-2*(r.Sync+eps), f.From+r.Window, nil), c.base)
			add(k-1+u, "outage K − 1 + U")
			add(count(f.To, back, nil), "outage B")
		case LiveForget:
			found := f.From + r.Sync + 2*eps
			if !meets(f.From, found) {
				continue
			}
			add(k+count(f.From, found+time.Nanosecond, nil), "forget K +")
			add(count(from, f.From, func(a LiveDecision) bool { return c.killedIn(a.Gateway, a.Sent, to) }), "forget, of ended lives,")
		case LiveRestart:
			if !meets(f.From, f.From+r.Window) {
				continue
			}
			add(count(from, f.From, func(a LiveDecision) bool { return a.Gateway == f.Gateway }), fmt.Sprintf("restart of %d", f.Gateway))
		case LiveSlow:
			if meets(f.From, f.To) {
				late = max(late, eps+f.Delay)
			}
		}
	}
	add(count(from, from+late, nil), "late")
	return core + extra, strings.Join(append([]string{coreWhy}, parts...), ", ")
}

// longest is the longest call among the admits counted in a window.
func longest(in []LiveDecision) time.Duration {
	var d time.Duration
	for _, a := range in {
		d = max(d, a.Answered-a.Sent)
	}
	return d
}

// killedIn reports whether gateway g was killed in [from, to).
func (c liveCheck) killedIn(g int, from, to time.Duration) bool {
	for _, f := range c.r.Faults {
		if f.Kind == LiveRestart && f.Gateway == g && f.From >= from && f.From < to {
			return true
		}
	}
	return false
}

// mergeOutages returns fs with overlapping outages made one: two records
// of one outage (the harness's, and a fallback count that grew in it) are
// one outage's terms, not two.
func mergeOutages(fs []LiveFault) []LiveFault {
	var out, os []LiveFault
	for _, f := range fs {
		if f.Kind == LiveOutage {
			os = append(os, f)
		} else {
			out = append(out, f)
		}
	}
	slices.SortFunc(os, func(x, y LiveFault) int { return int(x.From - y.From) })
	for i, o := range os {
		if i > 0 && o.From <= out[len(out)-1].To && out[len(out)-1].Kind == LiveOutage {
			out[len(out)-1].To = max(out[len(out)-1].To, o.To)
			continue
		}
		out = append(out, o)
	}
	return out
}
