package nemesis

import (
	"fmt"
	"slices"
	"strings"

	"github.com/fleetlimit/fleetlimit/sim"
)

// Options are a sweep of seeds.
type Options struct {
	// Seed is the first seed, and Seeds how many: the sweep checks seeds
	// Seed .. Seed+Seeds-1.
	Seed  uint64
	Seeds int
	// Designs are the designs drawn from (Designs when empty).
	Designs []string
	// Parallel runs fn(w, i) for every i in [0, n), on goroutines its
	// caller owns (w a worker index below Workers); nil runs them in turn.
	Parallel func(n int, fn func(w, i int))
	Workers  int
	// Progress, when set, is told after each batch how many cases are done.
	Progress func(done int)
}

// Failure is a case that broke a bound: its seed, its run, the violation,
// and the smallest schedule of its faults that still breaks one.
type Failure struct {
	Seed      uint64
	Params    sim.Params
	Violation Violation
	Minimal   sim.Params
	designs   []string // the sweep's, which the draw depends on
}

// Command is the command that checks the failing case again.
func (f Failure) Command() string {
	c := fmt.Sprintf("fleetlimit nemesis --seed %d --seeds 1", f.Seed)
	if len(f.designs) > 0 {
		c += " --designs " + strings.Join(f.designs, ",")
	}
	return c
}

// Report is what a sweep found.
type Report struct {
	Runs     map[string]int // cases run, by design
	Requests int64          // requests decided over all the runs
	Failures []Failure      // by seed
}

// batch is how many cases run between two progress reports.
const batch = 256

// Sweep checks every seed of o and shrinks each failure.
func Sweep(o Options) (Report, error) {
	if o.Seeds < 1 {
		return Report{}, fmt.Errorf("nemesis: %d seeds: want at least 1", o.Seeds)
	}
	for _, d := range o.Designs {
		if _, err := boundOf(d); err != nil {
			return Report{}, err
		}
	}
	par := o.Parallel
	if par == nil {
		par = func(n int, fn func(w, i int)) {
			for i := range n {
				fn(0, i)
			}
		}
	}
	type out struct {
		p   sim.Params
		v   *Violation
		req int64
		err error
	}
	rep := Report{Runs: map[string]int{}}
	for lo := 0; lo < o.Seeds; lo += batch {
		n := min(batch, o.Seeds-lo)
		outs := make([]out, n)
		par(n, func(_, i int) {
			seed := o.Seed + uint64(lo+i)
			p := Draw(seed, o.Designs)
			v, res, err := Check(p)
			outs[i] = out{p, v, res.Requests, err}
		})
		for i, x := range outs {
			if x.err != nil {
				return rep, fmt.Errorf("nemesis: seed %d: %w", o.Seed+uint64(lo+i), x.err)
			}
			rep.Runs[x.p.Design]++
			rep.Requests += x.req
			if x.v != nil {
				rep.Failures = append(rep.Failures, Failure{Seed: o.Seed + uint64(lo+i), Params: x.p, Violation: *x.v, Minimal: Shrink(x.p), designs: o.Designs})
			}
		}
		if o.Progress != nil {
			o.Progress(lo + n)
		}
	}
	return rep, nil
}

// Shrink returns the smallest schedule of p's faults it finds that still
// breaks a bound: it drops one fault at a time (an outage, a forget, a
// restart, the latency, the loss, the skew) while the run still fails, until
// no single drop keeps it failing. p itself when it does not fail.
func Shrink(p sim.Params) sim.Params {
	b, err := boundOf(p.Design)
	if err != nil {
		return p
	}
	return shrinkAs(p, b)
}

// shrinkAs is Shrink holding the runs to b.
func shrinkAs(p sim.Params, b Bound) sim.Params {
	if !fails(p, b) {
		return p
	}
	for {
		smaller := false
		for _, q := range drops(p) {
			if fails(q, b) {
				p, smaller = q, true
				break
			}
		}
		if !smaller {
			return p
		}
	}
}

// fails reports whether p's run breaks b.
func fails(p sim.Params, b Bound) bool {
	v, _, err := checkAs(p, b)
	return err == nil && v != nil
}

// drops are p with one of its faults left out each.
func drops(p sim.Params) []sim.Params {
	var out []sim.Params
	f := p.Faults
	with := func(g sim.Faults) {
		q := p
		q.Faults = g
		out = append(out, q)
	}
	for i := range f.Outages {
		g := f
		g.Outages = slices.Delete(slices.Clone(f.Outages), i, i+1)
		with(g)
	}
	for i := range f.Forgets {
		g := f
		g.Forgets = slices.Delete(slices.Clone(f.Forgets), i, i+1)
		with(g)
	}
	for i := range f.Restarts {
		g := f
		g.Restarts = slices.Delete(slices.Clone(f.Restarts), i, i+1)
		with(g)
	}
	if f.RTTP99 > 0 {
		g := f
		g.RTTP99 = 0
		with(g)
	}
	if f.RTT > 0 && f.RTTP99 == 0 {
		g := f
		g.RTT = 0
		with(g)
	}
	if f.Loss > 0 {
		g := f
		g.Loss = 0
		with(g)
	}
	if f.Skew > 0 {
		g := f
		g.Skew = 0
		with(g)
	}
	return out
}
