// Package nemesis draws fault schedules at random, runs fleetlimit's live
// designs through them in the simulator, and checks each run's whole
// history against the bounds docs/design.md states (Bounds, one table for
// the checker and the docs): Jepsen's nemesis and checker, on the
// simulator's deterministic clock, so that a failing seed fails again
// wherever it runs.
//
// It is the lab's, as sim is: a production package must never import it,
// and it must never read a clock or use global randomness (a case is a
// function of its seed).
package nemesis

import (
	"math/rand/v2"
	"slices"
	"time"

	"github.com/fleetlimit/fleetlimit/internal/design"
	"github.com/fleetlimit/fleetlimit/sim"
	"github.com/fleetlimit/fleetlimit/window"
)

// Designs are the live designs the nemesis draws from: every design a
// limiter enforces.
func Designs() []string { return design.Names() }

// rngStream tells the nemesis's draws from the simulator's own, which take
// the run's seed too.
const rngStream = 0x6e656d65736973

// The grid a case is drawn from.
var (
	drawGateways = []int{1, 2, 3, 4, 8, 16, 32}
	drawSyncs    = []time.Duration{100 * time.Millisecond, 250 * time.Millisecond, time.Second, 2 * time.Second}
	drawLimits   = []int{10, 60, 100, 500}
	drawWindows  = []time.Duration{10 * time.Second, time.Minute}
	drawTraffics = []string{"steady:0.5", "steady:0.9", "pageload:0.8", "flood:2", "flood:20", "flood:100", "steady:0.8,flood:20"}
)

// maxRequests keeps a case's run small: a nemesis run is one of thousands.
const maxRequests = 40_000

// Draw is the case of seed: a design of designs (Designs when empty), a
// fleet, a traffic and a fault schedule, all drawn from seed. The run's
// own seed is seed too.
func Draw(seed uint64, designs []string) sim.Params {
	if len(designs) == 0 {
		designs = Designs()
	}
	rng := rand.New(rand.NewPCG(seed, rngStream))
	p := sim.Defaults()
	p.Seed = seed
	p.Design = designs[rng.IntN(len(designs))]
	if i, err := design.Lookup(p.Design); err == nil && i.FixedWindow {
		p.WindowKind = window.Fixed
	}
	p.Gateways = pick(rng, drawGateways)
	p.Sync = pick(rng, drawSyncs)
	p.Limit = pick(rng, drawLimits)
	p.Window = pick(rng, drawWindows)
	p.Duration = p.Window * time.Duration(3+rng.IntN(4))
	p.Routing = sim.Routing(rng.IntN(2))
	drawTraffic(rng, &p)
	p.Faults = drawFaults(rng, p)
	return p
}

// drawTraffic sets p's traffic, a flood starting late in a mixed one, and
// makes a flood smaller while the run would be too long.
func drawTraffic(rng *rand.Rand, p *sim.Params) {
	mix, _ := sim.ParseMix(pick(rng, drawTraffics))
	for i := range mix {
		if mix[i].Kind == sim.Flood {
			if len(mix) > 1 {
				mix[i].Start = p.Window + time.Duration(rng.Int64N(int64(p.Window)))
			}
			windows := float64(p.Duration) / float64(p.Window)
			for mix[i].Factor > 1 && mix[i].Factor*float64(p.Limit)*windows > maxRequests {
				mix[i].Factor /= 2
			}
		}
	}
	p.Traffic, p.Also = mix[0], mix[1:]
}

// drawFaults draws each kind of fault with its own chance.
func drawFaults(rng *rand.Rand, p sim.Params) sim.Faults {
	var f sim.Faults
	d := int64(p.Duration)
	if rng.Float64() < 0.5 {
		f.Outages = drawOutages(rng, p)
	}
	if rng.Float64() < 0.35 {
		f.Forgets = drawTimes(rng, 1+rng.IntN(2), d)
	}
	if rng.Float64() < 0.4 {
		f.RTT = time.Duration(1+rng.IntN(20)) * time.Millisecond
		if rng.Float64() < 0.5 {
			f.RTTP99 = f.RTT * time.Duration(2+rng.IntN(29))
		}
	}
	if rng.Float64() < 0.3 {
		f.Loss = 0.01 + 0.29*rng.Float64()
	}
	if rng.Float64() < 0.35 {
		for _, t := range drawTimes(rng, 1+rng.IntN(3), d) {
			g := rng.IntN(p.Gateways + 1) // p.Gateways: all of them
			if g == p.Gateways {
				g = sim.AllGateways
			}
			f.Restarts = append(f.Restarts, sim.Restart{At: t, Gateway: g})
		}
	}
	if rng.Float64() < 0.25 {
		f.Skew = time.Duration(1+rng.IntN(500)) * time.Millisecond
	}
	return f
}

// drawOutages draws one to three outages, one after the other, each
// between a second and two windows long.
func drawOutages(rng *rand.Rand, p sim.Params) []sim.Outage {
	var os []sim.Outage
	at := time.Duration(0)
	for range 1 + rng.IntN(3) {
		left := p.Duration - at
		if left < 2*time.Second {
			break
		}
		start := at + time.Duration(1+rng.Int64N(int64(left)/2))
		length := time.Second + time.Duration(rng.Int64N(int64(2*p.Window)))
		if start+length >= p.Duration {
			length = p.Duration - start - 1
		}
		if length <= 0 {
			break
		}
		os = append(os, sim.Outage{At: start, For: length})
		at = start + length
	}
	return os
}

// drawTimes draws n distinct instants inside (0, d), in order, on whole
// milliseconds.
func drawTimes(rng *rand.Rand, n int, d int64) []time.Duration {
	var ts []time.Duration
	for range n {
		t := time.Duration(1+rng.Int64N(d/int64(time.Millisecond)-1)) * time.Millisecond
		if !slices.Contains(ts, t) {
			ts = append(ts, t)
		}
	}
	slices.Sort(ts)
	return ts
}

func pick[T any](rng *rand.Rand, from []T) T { return from[rng.IntN(len(from))] }
