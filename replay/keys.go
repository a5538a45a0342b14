package replay

import (
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/fleetlimit/fleetlimit/internal/design"
	"github.com/fleetlimit/fleetlimit/sim"
	"github.com/fleetlimit/fleetlimit/window"
)

// keyState is one key's requests gathered since it was last run.
type keyState struct {
	lim  Limit
	t    []int64 // replayed times, ascending
	g    []uint16
	n    []uint16 // the requests' costs; nil while every one is 1
	last int64
}

// pendingLine is a line waiting within the horizon.
type pendingLine struct {
	t       int64
	key, gw string
	client  string
	cost, n int
}

// pending holds the lines within the horizon in time order, ties in the
// log's order: a log in order costs a push and a pop a line; a line out of
// order moves back past the later ones.
type pending struct {
	q    []pendingLine
	head int
}

func (p *pending) len() int            { return len(p.q) - p.head }
func (p *pending) front() *pendingLine { return &p.q[p.head] }

func (p *pending) push(l pendingLine) {
	if p.head > 0 && p.head >= len(p.q)/2 { // reuse the space popped
		n := copy(p.q, p.q[p.head:])
		clear(p.q[n:])
		p.q, p.head = p.q[:n], 0
	}
	p.q = append(p.q, l)
	for i := len(p.q) - 1; i > p.head && p.q[i-1].t > p.q[i].t; i-- {
		p.q[i-1], p.q[i] = p.q[i], p.q[i-1]
	}
}

func (p *pending) pop() pendingLine {
	l := p.q[p.head]
	p.q[p.head] = pendingLine{}
	p.head++
	return l
}

// MaxCost is the most a request may cost.
const MaxCost = 1<<16 - 1

// pass takes a line, in time order, into its key's requests.
func (e *engine) pass(p pendingLine) error {
	if p.cost > MaxCost {
		return fmt.Errorf("line %d: cost %d: at most %d", p.n, p.cost, MaxCost)
	}
	lim := e.opt.Limit
	if e.opt.LimitOf != nil {
		var ok bool
		if lim, ok = e.opt.LimitOf(p.key); !ok {
			e.rep.Unlimited++
			e.note(p.t)
			return nil
		}
	}
	g, err := e.route(p)
	if err != nil {
		return err
	}
	if err := e.sweep(p.t); err != nil {
		return err
	}
	ks := e.keys[p.key]
	switch {
	case ks != nil && (ks.lim != lim || p.t-ks.last >= 2*int64(lim.Window) || len(ks.t) >= MaxSegment):
		if err := e.run(p.key, ks); err != nil {
			return err
		}
		ks.lim = lim
	case ks == nil:
		if len(e.keys) >= MaxKeysHeld {
			if err := e.evictOldest(); err != nil {
				return err
			}
		}
		ks = &keyState{lim: lim}
		e.keys[p.key] = ks
		e.seen[p.key] = true
	}
	if p.cost > 1 && ks.n == nil {
		ks.n = make([]uint16, len(ks.t), cap(ks.t))
		for i := range ks.n {
			ks.n[i] = 1
		}
	}
	if ks.n != nil {
		ks.n = append(ks.n, uint16(p.cost))
	}
	ks.t, ks.g, ks.last = append(ks.t, p.t), append(ks.g, uint16(g)), p.t
	e.rep.Requests++
	e.note(p.t)
	return nil
}

// note records a request's time in the report's span.
func (e *engine) note(t int64) {
	if e.rep.Start == 0 || t < e.rep.Start {
		e.rep.Start = t
	}
	e.rep.End = max(e.rep.End, t)
	e.last = t
}

// route picks a line's gateway.
func (e *engine) route(p pendingLine) (int, error) {
	k := e.opt.Gateways
	switch e.opt.Routing {
	case Even:
		return e.rng.IntN(k), nil
	case Uneven:
		x := e.rng.Float64() * e.cum[k-1]
		return sort.SearchFloat64s(e.cum, x), nil
	case StickyKey:
		return int(hashKey(e.opt.Seed, p.key) % uint64(k)), nil
	case StickyClient:
		if p.client == "" {
			return 0, fmt.Errorf("line %d: sticky-client routing, and the line names no client", p.n)
		}
		return int(hashKey(e.opt.Seed, p.client) % uint64(k)), nil
	}
	g, ok := e.gws[p.gw]
	if !ok {
		if len(e.gws) == k {
			return 0, fmt.Errorf("line %d: gateway %q is the log's %dth, more than --gateways %d", p.n, p.gw, k+1, k)
		}
		g = len(e.gws)
		e.gws[p.gw] = g
	}
	return g, nil
}

// sweep runs, once a window of log time, every key idle for two windows.
func (e *engine) sweep(now int64) error {
	if now < e.sweepAt {
		return nil
	}
	w := int64(e.opt.Limit.Window)
	if w <= 0 {
		w = int64(time.Minute)
	}
	e.sweepAt = now + w
	var idle []string
	for k, ks := range e.keys {
		if now-ks.last >= 2*int64(ks.lim.Window) {
			idle = append(idle, k)
		}
	}
	slices.Sort(idle) // a reproducible order for OnKey
	for _, k := range idle {
		if err := e.run(k, e.keys[k]); err != nil {
			return err
		}
		delete(e.keys, k)
	}
	return nil
}

// evictOldest runs the key seen least recently, to make room.
func (e *engine) evictOldest() error {
	var oldest string
	at := int64(1<<63 - 1)
	for k, ks := range e.keys {
		if ks.last < at {
			oldest, at = k, ks.last
		}
	}
	err := e.run(oldest, e.keys[oldest])
	delete(e.keys, oldest)
	return err
}

// run hands one segment of a key's requests to the workers (segments), and
// takes them from ks.
func (e *engine) run(key string, ks *keyState) error {
	if len(ks.t) == 0 {
		return nil
	}
	err := e.segs.add(segment{key: key, lim: ks.lim, t: ks.t, g: ks.g, n: ks.n})
	ks.t, ks.g, ks.n = nil, nil, nil
	return err
}

// runSegment runs one segment of a key's requests by the exact limit and
// every design: its KeyResult (without Designs), and each design's figures
// in figs, in the order of w.designs.
func (w *worker) runSegment(s *segment, figs []Figures) (KeyResult, error) {
	key, n := s.key, len(s.t)
	start := s.t[0]
	if cap(w.rel) < n {
		w.rel = make([]int64, n)
	}
	rel := w.rel[:n] // the runs read it and keep nothing of it
	for i, t := range s.t {
		rel[i] = t - start
	}
	wn := int64(s.lim.Window)
	dur := max(rel[n-1]+1, wn+1)
	p := sim.Params{Gateways: w.opt.Gateways, Sync: w.opt.Sync, Limit: s.lim.Requests, Window: s.lim.Window,
		WindowKind: w.opt.WindowKind, Routing: sim.Even, Duration: time.Duration(dur),
		Traffic: sim.Traffic{Kind: sim.Steady, Factor: float64(n) * float64(wn) / (float64(s.lim.Requests) * float64(dur))},
		Seed:    w.opt.Seed ^ hashKey(w.opt.Seed, key)}
	kr := KeyResult{Key: key, Limit: s.lim, Start: start, End: s.t[n-1]}
	if cap(w.exact) < n {
		w.exact = make([]bool, n)
	}
	exact := w.exact[:n]
	p.Design = Exact
	lone := n == 1 && s.n == nil && !w.opt.everySync && w.loneable(p)
	if lone {
		w.loneSyncs = sim.SyncsWithin(p, w.phase)
	}
	var rq *sim.Requests
	var err error
	switch {
	case lone:
		err = p.Validate()
	case s.n == nil: // the simulator's runs take requests of cost 1
		rq, err = sim.NewRequests(p, rel, s.g)
	default:
		err = p.Validate()
	}
	if err != nil {
		return kr, fmt.Errorf("key %q: %w", key, err)
	}
	for i, d := range w.designs {
		p.Design = d
		var f Figures
		switch {
		case lone:
			f, err = w.runLone(p, s.g[0], exact, d == Exact)
			if !w.noSync[d] {
				f.KeySyncs = w.loneSyncs
			}
			if w.opt.decided != nil {
				w.opt.decided(key, start, d, []bool{f.Admitted == 1})
			}
		case rq != nil && w.opt.decided == nil:
			f, err = runDesign(p, rq, exact, d == Exact)
		case rq != nil:
			run := sim.RunDecisions
			if w.opt.everySync {
				run = sim.RunRequestsTrace
			}
			var v []bool
			f, err = runDesignBy(run, p, rq, exact, d == Exact, func(admit bool) { v = append(v, admit) })
			w.opt.decided(key, start, d, v)
		default:
			f, err = runWeighted(p, rel, s.g, s.n, exact, d == Exact)
		}
		if err != nil {
			return kr, fmt.Errorf("key %q: %w", key, err)
		}
		figs[i] = f
	}
	return kr, nil
}

// fold adds a segment's figures, by design in the order of
// e.rep.Designs, to the report, in the segments' order.
func (e *engine) fold(kr KeyResult, figs []Figures) {
	for i, d := range e.rep.Designs {
		f := figs[i]
		all := e.rep.Figures[d]
		all.add(f, kr.Key)
		e.rep.Figures[d] = all
		if d != Exact && e.opt.Top > 0 && (f.FalseAdmit > 0 || f.FalseRefus > 0) {
			tk := e.top[d]
			if tk == nil {
				tk = &topKeys{n: e.opt.Top}
				e.top[d] = tk
			}
			tk.add(Affected{kr.Key, f.FalseAdmit, f.FalseRefus})
		}
	}
	e.rep.Segments++
	if e.opt.OnKey != nil {
		kr.Designs = make(map[string]Figures, len(figs))
		for i, d := range e.rep.Designs {
			kr.Designs[d] = figs[i]
		}
		e.opt.OnKey(kr)
	}
}

// runDesign runs one design on a segment's requests: with isExact, it
// records the exact limit's decisions in exact; otherwise compares with
// them.
func runDesign(p sim.Params, rq *sim.Requests, exact []bool, isExact bool) (Figures, error) {
	return runDesignBy(sim.RunDecisions, p, rq, exact, isExact, nil)
}

// runDesignBy is runDesign running the design by run, and telling decided
// (when set) each decision.
func runDesignBy(run func(sim.Params, *sim.Requests, sim.Trace) (sim.Result, error),
	p sim.Params, rq *sim.Requests, exact []bool, isExact bool, decided func(admit bool)) (Figures, error) {
	f := Figures{Requests: int64(len(exact))}
	i := 0
	res, err := run(p, rq, func(t int64, gw int, v design.Verdict) {
		admit := v == design.Admit
		if decided != nil {
			decided(admit)
		}
		switch {
		case isExact:
			exact[i] = admit
		case admit && !exact[i]:
			f.FalseAdmit++
		case !admit && exact[i]:
			f.FalseRefus++
		}
		i++
	})
	if err != nil {
		return Figures{}, err
	}
	f.Requests, f.Admitted, f.Rejected, f.RoundTrips = res.Requests, res.Admitted, res.Rejected, res.RoundTrips
	f.KeySyncs = res.Syncs
	f.WorstWindowX = res.WorstWindowX
	if p.WindowKind == window.Fixed {
		f.WorstWindowX = res.WorstFixedWindowX
	}
	return f, nil
}

// topKeys keeps the n keys a design treated most unlike the exact limit.
type topKeys struct {
	n    int
	keys []Affected
}

func (t *topKeys) add(a Affected) {
	t.keys = append(t.keys, a)
	if len(t.keys) > 4*t.n {
		t.keys = t.sorted()
	}
}

// sorted is the n most affected, most first (ties by key).
func (t *topKeys) sorted() []Affected {
	merged := map[string]Affected{}
	for _, a := range t.keys {
		m := merged[a.Key]
		m.Key, m.FalseAdmits, m.FalseRejects = a.Key, m.FalseAdmits+a.FalseAdmits, m.FalseRejects+a.FalseRejects
		merged[a.Key] = m
	}
	out := make([]Affected, 0, len(merged))
	for _, a := range merged {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool {
		si, sj := out[i].FalseAdmits+out[i].FalseRejects, out[j].FalseAdmits+out[j].FalseRejects
		return si > sj || si == sj && out[i].Key < out[j].Key
	})
	return out[:min(len(out), t.n)]
}

// without returns names less drop, in order.
func without(names []string, drop string) []string {
	var out []string
	for _, n := range names {
		if n != drop && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// hashKey is FNV-1a of s from a basis mixed with the replay's seed: sticky
// routing and each key's sync phases are reproducible from the seed.
func hashKey(seed uint64, s string) uint64 {
	h := uint64(14695981039346656037) ^ seed*0x9E3779B97F4A7C15
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// loneKey is what decides a segment of one request (of cost 1): the design,
// the key's limit and the gateway the request reached. The replay's K, Δ
// and window kind are the same for every segment.
type loneKey struct {
	design  string
	lim     Limit
	gateway uint16
}

// loneOutcome is how a design decided a segment of one request.
type loneOutcome struct {
	admit      bool
	roundTrips int64
	worst      float64
}

// loneable reports whether a segment of one request, run p, may take the
// outcome of another such segment: its request comes at 0, so it is decided
// on a fresh fleet before any sync unless a gateway syncs at 0; the syncs
// after it change no decision. What is left of the seed, the sync phases
// (kept in w.phase), counts only in the scheduled syncs.
func (w *worker) loneable(p sim.Params) bool {
	w.phase, _ = sim.SyncPhases(p)
	return !slices.Contains(w.phase, 0)
}

// runLone is runDesign for a segment of one request at gateway g, run p
// (loneable): the design runs once for each limit and gateway, and the
// segments after take its outcome.
func (w *worker) runLone(p sim.Params, g uint16, exact []bool, isExact bool) (Figures, error) {
	k := loneKey{p.Design, Limit{p.Limit, p.Window}, g}
	o, ok := w.lone[k]
	if !ok {
		rq, err := sim.NewRequests(p, []int64{0}, []uint16{g})
		if err != nil {
			return Figures{}, err
		}
		var v [1]bool
		f, err := runDesign(p, rq, v[:], true)
		if err != nil {
			return Figures{}, err
		}
		o = loneOutcome{admit: v[0], roundTrips: f.RoundTrips, worst: f.WorstWindowX}
		w.lone[k] = o
	}
	f := Figures{Requests: 1, RoundTrips: o.roundTrips, WorstWindowX: o.worst}
	if o.admit {
		f.Admitted = 1
	} else {
		f.Rejected = 1
	}
	switch {
	case isExact:
		exact[0] = o.admit
	case o.admit && !exact[0]:
		f.FalseAdmit = 1
	case !o.admit && exact[0]:
		f.FalseRefus = 1
	}
	return f, nil
}
