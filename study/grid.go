// Package study runs the whole study of fleetlimit (every design through the
// study's scenarios) and turns its results into a report: results.csv,
// summary.json, plots and report.md. Every number in the report is computed
// from results.csv; none is typed by hand.
//
// It must never make a run's outcome depend on the number of workers or the
// order runs finish in.
package study

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/fleetlimit/fleetlimit/sim"
	"github.com/fleetlimit/fleetlimit/sim/catalog"
	"github.com/fleetlimit/fleetlimit/window"
)

// Parts of the grid.
const (
	PartHonest = "honest" // honest traffic, quiet key
	PartFlood  = "flood"  // floods, sliding window
	PartBusy   = "busy"   // honest traffic, busy key (L = 10,000)
	PartFixed  = "fixed"  // floods against shared-counter, fixed window
	// PartBeyond goes past the study's caveats: targeted and pulsed
	// floods, sudden floods on an honest key, a slow or lossy store and
	// restarts, at K = 8 (and K = 32 for targeted floods), Δ = 1 s.
	PartBeyond = "beyond"
)

// Run is one run of the grid: its part and its parameters.
type Run struct {
	Part   string
	Params sim.Params
}

// The study's axes.
var (
	Gateways      = []int{2, 4, 8, 16, 32}
	Syncs         = []time.Duration{100 * time.Millisecond, 300 * time.Millisecond, time.Second, 3 * time.Second, 10 * time.Second}
	HonestTraffic = []string{"steady:0.5", "steady:0.8", "steady:1", "pageload:0.5", "pageload:0.8"}
	Floods        = []float64{1.5, 3, 10, 30, 100, 300, 1000}
	BusyGateways  = []int{2, 8, 32}
	// BusySyncs spans the study's Δ over two decades. The study leaves the
	// busy key's Δ open; all five made that part alone take 51 s instead
	// of 27 s (docs/performance.md).
	BusySyncs   = []time.Duration{100 * time.Millisecond, time.Second, 10 * time.Second}
	BusyTraffic = []string{"steady:0.8", "steady:1"}
)

// Study sizes.
const (
	BusyLimit    = 10000
	honestSeeds  = 5
	floodSeeds   = 3
	busySeeds    = 3
	honestLength = 300 * time.Minute
	busyLength   = 60 * time.Minute
)

// FloodDuration is the simulated time of a flood run: 60 minutes up to
// flood:10, 30 up to flood:100, 20 beyond, so that no run passes about
// 2.6 million requests while every run measures at least 19 windows.
func FloodDuration(m float64) time.Duration {
	switch {
	case m <= 10:
		return 60 * time.Minute
	case m <= 100:
		return 30 * time.Minute
	}
	return 20 * time.Minute
}

func base(name string, k int, sync time.Duration, seed uint64) sim.Params {
	p := sim.Defaults()
	p.Design, p.Gateways, p.Sync, p.Seed = name, k, sync, seed
	return p
}

func traffic(s string) sim.Traffic {
	t, err := sim.ParseTraffic(s)
	if err != nil {
		panic(err) // the study's own constants
	}
	return t
}

// GridDesigns are the designs the honest, flood and busy parts run: the
// study's seven and fleetlimit's own.
func GridDesigns() []string {
	return append(slices.Clone(catalog.StudyDesigns), catalog.OwnDesigns...)
}

// Grid returns the full default grid, in a fixed order.
func Grid() []Run {
	var runs []Run
	for _, name := range GridDesigns() {
		for _, k := range Gateways {
			for _, sync := range Syncs {
				for _, tr := range HonestTraffic {
					for _, routing := range []sim.Routing{sim.Even, sim.Uneven} {
						for s := uint64(1); s <= honestSeeds; s++ {
							p := base(name, k, sync, s)
							p.Traffic, p.Routing, p.Duration = traffic(tr), routing, honestLength
							runs = append(runs, Run{PartHonest, p})
						}
					}
				}
				for _, m := range Floods {
					for s := uint64(1); s <= floodSeeds; s++ {
						p := base(name, k, sync, s)
						p.Traffic, p.Duration = sim.Traffic{Kind: sim.Flood, Factor: m}, FloodDuration(m)
						runs = append(runs, Run{PartFlood, p})
						if name == "shared-counter" {
							p.WindowKind = window.Fixed
							runs = append(runs, Run{PartFixed, p})
						}
					}
				}
			}
		}
		for _, k := range BusyGateways {
			for _, sync := range BusySyncs {
				for _, tr := range BusyTraffic {
					for _, routing := range []sim.Routing{sim.Even, sim.Uneven} {
						for s := uint64(1); s <= busySeeds; s++ {
							p := base(name, k, sync, s)
							p.Limit, p.Traffic, p.Routing, p.Duration = BusyLimit, traffic(tr), routing, busyLength
							runs = append(runs, Run{PartBusy, p})
						}
					}
				}
			}
		}
	}
	for _, name := range BeyondDesigns() {
		runs = append(runs, beyond(name)...)
	}
	for _, name := range BeyondDesigns() {
		runs = append(runs, counterRuns(name)...)
	}
	for _, name := range BeyondDesigns() {
		runs = append(runs, limitRuns(name)...)
	}
	runs = append(runs, peerRuns()...)
	for _, name := range GridDesigns() {
		runs = append(runs, fleetRuns(name)...)
	}
	return runs
}

// The beyond part's axes.
var (
	BeyondRTTs   = []time.Duration{time.Millisecond, 10 * time.Millisecond, 50 * time.Millisecond}
	BeyondLosses = []float64{0.01, 0.1}
	BeyondPulses = []string{"flood:100~10s/50s", "flood:1000~5s/55s"}
	// BeyondRestarts restart the whole fleet three times.
	BeyondRestarts = []sim.Restart{{At: 5 * time.Minute, Gateway: sim.AllGateways}, {At: 10 * time.Minute, Gateway: sim.AllGateways},
		{At: 15 * time.Minute, Gateway: sim.AllGateways}}
	BeyondTargetKs = []int{refK, 32}
	// BeyondMembers grow the fleet of 8 by one at 5 minutes and crash
	// three of its 9 at 12 (sim.Faults.Members).
	BeyondMembers = []sim.MemberChange{{At: 5 * time.Minute, Gateways: refK + 1}, {At: 12 * time.Minute, Gateways: refK - 2}}
)

// The beyond part's runs.
const (
	beyondFlood   = "flood:100"
	beyondSeeds   = 3
	beyondFloodT  = 20 * time.Minute
	beyondHonestT = 60 * time.Minute
	beyondAttack  = 10 * time.Minute
)

// BeyondDesigns are the designs the beyond part runs: every registered
// design that counts in a sliding window, so that a design added later takes
// part, but the peers' (catalog.Info.Peer), which the peers part runs.
func BeyondDesigns() []string {
	var out []string
	for _, n := range catalog.Sliding() {
		if info, _ := catalog.Lookup(n); !info.Peer {
			out = append(out, n)
		}
	}
	return out
}

// Targets are the n of the beyond part's targeted floods at K gateways: one
// gateway, two, half the fleet and all of it.
func Targets(k int) []int { return []int{1, 2, k / 2, k} }

// beyond returns design name's runs of the beyond part.
func beyond(name string) []Run {
	var runs []Run
	add := func(k int, tr string, routing sim.Routing, length time.Duration, f sim.Faults) {
		mix, err := sim.ParseMix(tr)
		if err != nil {
			panic(err) // the study's own constants
		}
		for s := uint64(1); s <= beyondSeeds; s++ {
			p := base(name, k, refSync, s)
			p.Traffic, p.Also, p.Routing, p.Duration, p.Faults = mix[0], mix[1:], routing, length, f
			runs = append(runs, Run{PartBeyond, p})
		}
	}
	honest := func(f sim.Faults) { add(refK, refHonest, sim.Uneven, beyondHonestT, f) }
	flood := func(f sim.Faults) { add(refK, beyondFlood, sim.Even, beyondFloodT, f) }
	flood(sim.Faults{})
	honest(sim.Faults{})
	for _, k := range BeyondTargetKs {
		for _, n := range Targets(k) {
			add(k, fmt.Sprintf("%s@%d", beyondFlood, n), sim.Even, beyondFloodT, sim.Faults{})
		}
	}
	for _, pulse := range BeyondPulses {
		add(refK, pulse, sim.Even, beyondFloodT, sim.Faults{})
	}
	for _, target := range []string{"", "@1"} {
		add(refK, fmt.Sprintf("%s,%s%s+%v", refHonest, beyondFlood, target, beyondAttack), sim.Uneven, beyondFloodT, sim.Faults{})
	}
	for _, rtt := range BeyondRTTs {
		flood(sim.Faults{RTT: rtt})
		honest(sim.Faults{RTT: rtt})
	}
	for _, loss := range BeyondLosses {
		flood(sim.Faults{Loss: loss})
		honest(sim.Faults{Loss: loss})
	}
	flood(sim.Faults{Restarts: BeyondRestarts})
	honest(sim.Faults{Restarts: BeyondRestarts})
	flood(sim.Faults{Members: BeyondMembers})
	honest(sim.Faults{Members: BeyondMembers})
	return runs
}

// Quick returns a reduced grid for a first look: K in {2, 8, 32}, Δ in
// {0.1, 1, 10} s, two honest traffics, three floods, one seed each, shorter
// runs and a lighter busy key.
func Quick() []Run {
	keepK := map[int]bool{2: true, 8: true, 32: true}
	keepSync := map[time.Duration]bool{100 * time.Millisecond: true, time.Second: true, 10 * time.Second: true}
	keepTraffic := map[string]bool{"steady:0.8": true, "pageload:0.8": true, "flood:3": true, "flood:30": true, "flood:300": true, "steady:1": true}
	var runs []Run
	for _, r := range Grid() {
		p := r.Params
		if r.Part == PartBeyond || r.Part == PartCounters || r.Part == PartLimits || r.Part == PartPeers {
			if p.Seed == 1 && p.Gateways == refK {
				runs = append(runs, r)
			}
			continue
		}
		if !keepK[p.Gateways] || !keepSync[p.Sync] || p.Seed != 1 || !keepTraffic[p.Traffic.String()] {
			continue
		}
		switch r.Part {
		case PartHonest:
			p.Duration = 60 * time.Minute
		case PartBusy:
			if p.Routing == sim.Even || p.Sync != time.Second { // the report's lease table reads uneven routing
				continue
			}
			p.Duration = 10 * time.Minute
		default:
			p.Duration = 10 * time.Minute
		}
		r.Params = p
		runs = append(runs, r)
	}
	return runs
}

// Filter selects runs. Its text form is a list of key=value terms separated
// by spaces or semicolons; a run must match every term, and a term matches
// when any of its comma-separated values does. Keys: part, design, k, sync,
// traffic (a full spec such as flood:100, or a model name such as flood),
// routing, kind (sliding or fixed, which take in their counters too, or
// one with its counters such as sliding/60), limit, seed.
type Filter map[string][]string

var filterKeys = []string{"part", "design", "k", "sync", "traffic", "routing", "kind", "limit", "seed"}

// ParseFilter parses the text form of a Filter.
func ParseFilter(s string) (Filter, error) {
	f := Filter{}
	for _, term := range strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == ';' }) {
		key, vals, ok := strings.Cut(term, "=")
		if !ok || vals == "" {
			return nil, fmt.Errorf("filter term %q: want key=value[,value...] with key one of %s", term, strings.Join(filterKeys, ", "))
		}
		known := false
		for _, k := range filterKeys {
			known = known || k == key
		}
		if !known {
			return nil, fmt.Errorf("filter key %q: want one of %s", key, strings.Join(filterKeys, ", "))
		}
		for _, v := range strings.Split(vals, ",") {
			if key == "sync" {
				d, err := time.ParseDuration(v)
				if err != nil {
					return nil, fmt.Errorf("filter sync=%s: not a duration such as 1s or 100ms", v)
				}
				v = d.String()
			}
			if err := checkFilterValue(key, v); err != nil {
				return nil, err
			}
			f[key] = append(f[key], v)
		}
	}
	return f, nil
}

// checkFilterValue reports a value that no run could have under key, so
// that a typo is named instead of selecting nothing.
func checkFilterValue(key, v string) error {
	switch key {
	case "design":
		if _, err := catalog.Lookup(v); err != nil {
			return fmt.Errorf("filter: %w", err)
		}
	case "k", "limit", "seed":
		if n, err := strconv.ParseUint(v, 10, 64); err != nil || n == 0 {
			return fmt.Errorf("filter %s=%s: want a whole number of at least 1", key, v)
		}
	case "traffic":
		if _, err := sim.ParseTraffic(v); err != nil && v != "steady" && v != "pageload" && v != "flood" {
			return fmt.Errorf("filter traffic=%s: want a model (steady, pageload, flood) or a spec such as flood:100", v)
		}
	case "routing":
		if _, err := sim.ParseRouting(v); err != nil {
			return fmt.Errorf("filter: %w", err)
		}
	case "kind":
		if _, _, err := window.ParseCounting(v); err != nil {
			return fmt.Errorf("filter: %w", err)
		}
	case "part":
		if !slices.Contains(Parts, v) {
			return fmt.Errorf("filter part=%s: want %s", v, partsWanted())
		}
	}
	return nil
}

func (f Filter) matches(r Run) bool {
	p := r.Params
	fields := map[string][]string{
		"part": {r.Part}, "design": {p.Design}, "k": {strconv.Itoa(p.Gateways)}, "sync": {p.Sync.String()},
		"traffic": {p.Traffic.String(), strings.SplitN(p.Traffic.String(), ":", 2)[0]},
		"routing": {p.Routing.String()}, "kind": {p.WindowKind.String(), p.Spec().String()}, "limit": {strconv.Itoa(p.Limit)},
		"seed": {strconv.FormatUint(p.Seed, 10)},
	}
	for key, want := range f {
		hit := false
		for _, w := range want {
			for _, have := range fields[key] {
				hit = hit || w == have
			}
		}
		if !hit {
			return false
		}
	}
	return true
}

// Select returns the runs f matches, in order.
func (f Filter) Select(runs []Run) []Run {
	var out []Run
	for _, r := range runs {
		if f.matches(r) {
			out = append(out, r)
		}
	}
	return out
}

// ExpectedRequests is a run's expected number of requests, a cost estimate.
func ExpectedRequests(p sim.Params) float64 {
	var n float64
	for _, t := range p.Mix() {
		n += t.Factor * float64(p.Limit) * float64(p.Duration-t.Start) / float64(p.Window)
	}
	return n
}

// Costs of a run's parts in nanoseconds of CPU, as the whole study measured
// them on 2026-12-03 (docs/performance.md, "The speed pass"). In a run that
// goes over every sync (a busy key, a flood): a flood's request, most of
// which a design refuses without being asked; any other request; a sync
// performed; a quiet one left out, which a run with no flood does. In a run
// that schedules only the syncs that matter (a quiet key, the simulator's
// lazy mode): a request, with the two or so syncs it makes real.
// central-log's every request asks the store. A design whose syncs are
// seldom quiet (catalog.Info.BusySyncs, permit) performs each, at the cost
// of ranking its slots (measured 2026-12-05: 165 ns a sync on a quiet key
// of 32 gateways, Δ = 0.1 s).
const (
	costRankedSync     = 165
	costFloodRequest   = 10
	costBusyRequest    = 130
	costSync           = 60
	costSkippedSync    = 6
	costQuietRequest   = 330
	costCentralRequest = 40
)

// runCost estimates a run's CPU time, for the order runs start in and the
// progress line's estimate.
func runCost(p sim.Params) float64 {
	syncs := float64(p.Gateways) * float64(p.Duration) / float64(p.Sync)
	flood := p.HasFlood()
	lazyBelow := 0.1 // about as the simulator chooses its mode: 0.5 with a flood
	if flood {
		lazyBelow = 0.5
	}
	requests := ExpectedRequests(p)
	info, _ := catalog.Lookup(p.Design)
	eager := requests/syncs >= lazyBelow || info.BusySyncs
	var c float64
	for _, t := range p.Mix() {
		n := t.Factor * float64(p.Limit) * float64(p.Duration-t.Start) / float64(p.Window)
		switch {
		case p.Design == "central-log":
			c += n * costCentralRequest
		case !eager:
			c += n * costQuietRequest
		case t.Kind == sim.Flood:
			c += n * costFloodRequest
		default:
			c += n * costBusyRequest
		}
	}
	switch {
	case info.BusySyncs:
		c += syncs * costRankedSync // every sync performed
	case eager && p.Design != "central-log":
		performed := syncs
		if !flood {
			performed = min(syncs, 2*requests) // about two a request matter
		}
		c += performed*costSync + (syncs-performed)*costSkippedSync
	}
	if p.Faults.Active() {
		c *= 2 // the fault engine's events
	}
	return c
}

// costOrder returns the indexes of runs, the most expensive first, so that
// parallel workers do not end on one long run. sweep starts the runs that
// share their requests together, where the dearest of them stands.
func costOrder(runs []Run) []int {
	idx := make([]int, len(runs))
	cost := make([]float64, len(runs))
	for i, r := range runs {
		idx[i] = i
		cost[i] = runCost(r.Params)
	}
	sort.SliceStable(idx, func(a, b int) bool { return cost[idx[a]] > cost[idx[b]] })
	return idx
}
