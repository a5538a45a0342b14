// Package sim is fleetlimit's deterministic discrete-event simulator: it runs
// K gateways of one design for one key against a traffic model, syncing each
// gateway with the embedded store every Δ, and measures what the fleet
// admits, rejects and costs.
//
// A run is a pure function of its Params: time is virtual, randomness comes
// from streams seeded by Params.Seed, and the store is memstore. The package
// never reads a clock, starts a goroutine, or does I/O; running many runs in
// parallel is the sweep package's job.
package sim

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/fleetlimit/fleetlimit/design"
	"github.com/fleetlimit/fleetlimit/store/memstore"
	"github.com/fleetlimit/fleetlimit/window"
)

// Params fully determine a run.
type Params struct {
	Design      string
	Gateways    int           // K
	Sync        time.Duration // Δ
	Limit       int           // L
	Window      time.Duration // W
	WindowKind  window.Kind
	Traffic     Traffic
	Routing     Routing
	Duration    time.Duration // simulated time
	AlignedSync bool          // every gateway syncs at the multiples of Δ
	Seed        uint64
}

// Defaults are the study's defaults for what Params leave open.
func Defaults() Params {
	return Params{
		Design:   "shared-counter",
		Gateways: 8,
		Sync:     time.Second,
		Limit:    100,
		Window:   time.Minute,
		Traffic:  Traffic{Kind: Steady, Factor: 0.8},
		Duration: time.Hour,
		Seed:     1,
	}
}

// MaxRequests bounds the expected requests of one run, so that a typo in a
// flood factor or duration fails at once instead of running for hours.
const MaxRequests = 2e9

// Validate reports the first thing wrong with p, saying what is allowed.
func (p Params) Validate() error {
	if _, err := design.Lookup(p.Design); err != nil {
		return err
	}
	switch {
	case p.Gateways < 1 || p.Gateways > 4096:
		return fmt.Errorf("gateways %d: must be between 1 and 4096", p.Gateways)
	case p.Sync <= 0:
		return fmt.Errorf("sync %v: must be a positive duration, e.g. 1s or 300ms", p.Sync)
	case p.Limit < 1:
		return fmt.Errorf("limit %d: must be at least 1", p.Limit)
	case p.Window <= 0:
		return fmt.Errorf("window %v: must be a positive duration, e.g. 1m", p.Window)
	case p.WindowKind != window.Sliding && p.WindowKind != window.Fixed:
		return fmt.Errorf("window kind %v: want sliding or fixed", p.WindowKind)
	case p.Traffic.Kind < Steady || p.Traffic.Kind > Flood || !(p.Traffic.Factor > 0):
		return fmt.Errorf("traffic %v: want steady:F, pageload:F or flood:M with a positive number", p.Traffic)
	case p.Routing != Even && p.Routing != Uneven:
		return fmt.Errorf("routing %v: want even or uneven", p.Routing)
	case p.Duration <= p.Window:
		return fmt.Errorf("duration %v: must be longer than the window (%v), since figures are taken after the first window", p.Duration, p.Window)
	}
	expected := p.Traffic.Factor * float64(p.Limit) * float64(p.Duration) / float64(p.Window)
	if expected > MaxRequests {
		return fmt.Errorf("traffic %v for %v at limit %d is about %.3g requests: more than the %.0g a run allows", p.Traffic, p.Duration, p.Limit, expected, float64(MaxRequests))
	}
	return nil
}

// String names the run the way the command line would.
func (p Params) String() string {
	s := fmt.Sprintf("--design %s --gateways %d --sync %v --limit %d --window %v --traffic %v --routing %v --duration %v --seed %d --window-kind %v",
		p.Design, p.Gateways, p.Sync, p.Limit, p.Window, p.Traffic, p.Routing, p.Duration, p.Seed, p.WindowKind)
	if p.AlignedSync {
		s += " --aligned-sync"
	}
	return s
}

// Result is what one run reports.
type Result struct {
	Params Params

	Requests   int64 // arrivals
	Admitted   int64
	Rejected   int64
	RoundTrips int64 // requests whose decision waited on the store
	Syncs      int64 // gateway syncs performed

	// AdmittedX is admitted requests per window after the first window,
	// as a multiple of L (per minute, for the study's 1-minute window).
	AdmittedX float64
	// WorstWindowX is the most admitted in any W-long interval, over L.
	WorstWindowX float64
	// WorstFixedWindowX is the most admitted in any fixed window
	// [nW, (n+1)W), over L.
	WorstFixedWindowX float64
	// RejectedPct is the share of requests rejected, in percent (the
	// honest client's cost in honest runs, the attacker's in floods).
	RejectedPct float64
	// RoundTripPct is the share of requests that waited on the store.
	RoundTripPct float64
	// StrandedX is the time-averaged lease slots granted and not used,
	// fleet-wide, over L (0 outside the lease designs).
	StrandedX float64
}

// Stream numbers keep the random streams of a run apart: the arrivals and
// the routing do not depend on the design, so every design of a scenario
// sees the very same requests at the very same gateways.
const (
	streamArrivals = iota + 1
	streamRouting
	streamPhases
)

func rngFor(seed uint64, stream uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, stream*0x9E3779B97F4A7C15))
}

// Trace, when set, is called with every decision of a run.
type Trace func(t int64, gateway int, d design.Decision)

// Run runs one simulation.
func Run(p Params) (Result, error) { return RunTrace(p, nil) }

// RunTrace runs one simulation and reports every decision to trace.
func RunTrace(p Params, trace Trace) (Result, error) {
	if err := p.Validate(); err != nil {
		return Result{}, err
	}
	info, _ := design.Lookup(p.Design)
	spec := window.Spec{Size: p.Window, Kind: p.WindowKind}
	k := p.Gateways
	gws := make([]design.Gateway, k)
	for i := range gws {
		gws[i] = info.New(design.Config{Limit: p.Limit, Window: spec, Gateways: k, Gateway: i, Sync: p.Sync})
	}
	key := memstore.NewKey(p.Limit, spec)
	src := newArrivals(rngFor(p.Seed, streamArrivals), p.Traffic, p.Limit, int64(p.Window))
	route := newRouter(rngFor(p.Seed, streamRouting), p.Routing, k)

	// Each gateway syncs at phase + nΔ. With one Δ for all, the syncs go
	// round in the order of the phases, so the next sync is always
	// order[j]'s n-th.
	delta := int64(p.Sync)
	phase := make([]int64, k)
	order := make([]int, k)
	prng := rngFor(p.Seed, streamPhases)
	for i := range phase {
		order[i] = i
		if !p.AlignedSync {
			phase[i] = prng.Int64N(delta)
		}
	}
	sort.SliceStable(order, func(a, b int) bool { return phase[order[a]] < phase[order[b]] })
	syncs := !info.NoSync
	j, round := 0, int64(0)
	nextSync := phase[order[0]]

	end := int64(p.Duration)
	m := newMeter(p, info.Leases)
	for {
		t := src.next()
		if t >= end {
			break
		}
		for syncs && nextSync <= t {
			m.syncOne(nextSync, gws[order[j]], key)
			if j++; j == k {
				j = 0
				round++
			}
			nextSync = phase[order[j]] + round*delta
		}
		g := route.pick()
		gw := gws[g]
		held := 0
		if m.leases {
			held = gw.Held()
		}
		d, q := gw.Decide(t, 1)
		if d == design.Ask {
			m.roundTrips++
			var a design.Answer
			switch q.Kind {
			case design.QueryCentral:
				a.Admit = key.Central(t, g, q.N)
			case design.QueryGrant:
				a.Granted = key.Grant(t, g, q.N)
			}
			d = gw.Resume(t, 1, q, a)
		}
		if m.leases {
			m.held(t, gw.Held()-held)
		}
		m.decide(t, d)
		if trace != nil {
			trace(t, g, d)
		}
	}
	for syncs && nextSync < end {
		m.syncOne(nextSync, gws[order[j]], key)
		if j++; j == k {
			j = 0
			round++
		}
		nextSync = phase[order[j]] + round*delta
	}
	return m.result(end), nil
}
