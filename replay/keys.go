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
		ks.t, ks.g, ks.n, ks.lim = ks.t[:0], ks.g[:0], nil, lim
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

// run runs one segment of a key's requests by the exact limit and every
// design, and adds its figures.
func (e *engine) run(key string, ks *keyState) error {
	n := len(ks.t)
	if n == 0 {
		return nil
	}
	start := ks.t[0]
	if cap(e.rel) < n {
		e.rel = make([]int64, n)
	}
	rel := e.rel[:n] // the runs read it and keep nothing of it
	for i, t := range ks.t {
		rel[i] = t - start
	}
	w := int64(ks.lim.Window)
	dur := max(rel[n-1]+1, w+1)
	p := sim.Params{Gateways: e.opt.Gateways, Sync: e.opt.Sync, Limit: ks.lim.Requests, Window: ks.lim.Window,
		WindowKind: e.opt.WindowKind, Routing: sim.Even, Duration: time.Duration(dur),
		Traffic: sim.Traffic{Kind: sim.Steady, Factor: float64(n) * float64(w) / (float64(ks.lim.Requests) * float64(dur))},
		Seed:    e.opt.Seed ^ hashKey(e.opt.Seed, key)}
	kr := KeyResult{Key: key, Limit: ks.lim, Start: start, End: ks.t[n-1], Designs: map[string]Figures{}}
	if cap(e.exact) < n {
		e.exact = make([]bool, n)
	}
	exact := e.exact[:n]
	p.Design = Exact
	var rq *sim.Requests
	var err error
	if ks.n == nil { // the simulator's runs take requests of cost 1
		if rq, err = sim.NewRequests(p, rel, ks.g); err != nil {
			return fmt.Errorf("key %q: %w", key, err)
		}
	} else if err = p.Validate(); err != nil {
		return fmt.Errorf("key %q: %w", key, err)
	}
	for _, d := range e.rep.Designs {
		p.Design = d
		var f Figures
		if rq != nil {
			f, err = e.runDesign(p, rq, exact, d == Exact)
		} else {
			f, err = runWeighted(p, rel, ks.g, ks.n, exact, d == Exact)
		}
		if err != nil {
			return fmt.Errorf("key %q: %w", key, err)
		}
		kr.Designs[d] = f
		all := e.rep.Figures[d]
		all.add(f, key)
		e.rep.Figures[d] = all
		if d != Exact && e.opt.Top > 0 && (f.FalseAdmit > 0 || f.FalseRefus > 0) {
			tk := e.top[d]
			if tk == nil {
				tk = &topKeys{n: e.opt.Top}
				e.top[d] = tk
			}
			tk.add(Affected{key, f.FalseAdmit, f.FalseRefus})
		}
	}
	e.rep.Segments++
	if e.opt.OnKey != nil {
		e.opt.OnKey(kr)
	}
	return nil
}

// runDesign runs one design on a segment's requests: with isExact, it
// records the exact limit's decisions in exact; otherwise compares with
// them.
func (e *engine) runDesign(p sim.Params, rq *sim.Requests, exact []bool, isExact bool) (Figures, error) {
	f := Figures{Requests: int64(len(exact))}
	i := 0
	res, err := sim.RunRequestsTrace(p, rq, func(t int64, gw int, v design.Verdict) {
		admit := v == design.Admit
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
