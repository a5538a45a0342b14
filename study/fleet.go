package study

import (
	"fmt"
	"math"
	"slices"
	"time"

	"gonum.org/v1/plot/plotter"

	"github.com/fleetlimit/fleetlimit/sim"
	"github.com/fleetlimit/fleetlimit/sim/catalog"
	"github.com/fleetlimit/fleetlimit/window"
)

// PartFleet runs the study's designs and fleetlimit's own on fleets of 64
// and 128 gateways: a quiet key's honest client under both
// routings, and the floods (every rate, aimed at a few gateways, pulsed, and
// sudden on a key with an honest client), Δ = 1 s.
const PartFleet = "fleet"

// The fleet part's axes.
var (
	FleetGateways = []int{64, 128}
	FleetFloods   = []string{"flood:1.5", "flood:10", "flood:100", "flood:1000", "flood:100@1", "flood:100@3",
		"flood:100~10s/50s", refHonest + ",flood:100+10m"}
)

const (
	fleetSeeds   = 3
	fleetHonestT = 60 * time.Minute
	fleetFloodT  = 20 * time.Minute
)

// fleetRuns returns design name's runs of the fleet part.
func fleetRuns(name string) []Run {
	var runs []Run
	add := func(k int, mix []sim.Traffic, routing sim.Routing, length time.Duration) {
		for s := uint64(1); s <= fleetSeeds; s++ {
			p := base(name, k, refSync, s)
			p.Traffic, p.Also, p.Routing, p.Duration = mix[0], mix[1:], routing, length
			runs = append(runs, Run{PartFleet, p})
		}
	}
	for _, k := range FleetGateways {
		for _, routing := range []sim.Routing{sim.Even, sim.Uneven} {
			add(k, fleetMix(refHonest), routing, fleetHonestT)
		}
		for _, tr := range FleetFloods {
			mix := fleetMix(tr)
			length := fleetFloodT
			if len(mix) == 1 && mix[0].Target == 0 && mix[0].On == 0 {
				length = FloodDuration(mix[0].Factor)
			}
			add(k, mix, sim.Even, length)
		}
	}
	return runs
}

// fleetMix parses one of the fleet part's traffics.
func fleetMix(tr string) []sim.Traffic {
	mix, err := sim.ParseMix(tr)
	if err != nil {
		panic(err) // the study's own constants
	}
	return mix
}

// fleetCell is a scenario of the fleet part.
func fleetCell(d string, k int, tr string, routing sim.Routing) Cell {
	mix := fleetMix(tr)
	p := sim.Params{Traffic: mix[0], Also: mix[1:]}
	return Cell{PartFleet, d, k, refSync, quietLimit, refWindow, window.Sliding, 0, p.MixString(), routing, ""}
}

// quietTripsCell is design d's steady:0.8 scenario at K = k, Δ = 1 s: from
// the honest part up to K = 32, from the fleet part beyond.
func quietTripsCell(d string, k int, routing sim.Routing) Cell {
	if k > Gateways[len(Gateways)-1] {
		return fleetCell(d, k, refHonest, routing)
	}
	c := honestCell(d, k, refSync, refHonest)
	c.Routing = routing
	return c
}

// RoundTripBound is the least share of honest requests that any design
// must send to the store (the lower bound), at K = k gateways under
// routing r, for an honest client at load × L of a limit L = limit whose
// worst window must stay within (1 + eps) × L whatever a flood does.
//
// A gateway that admits a request alone does so on what the store told it
// at its last contact; since a flood may spend at once whatever every
// gateway would admit alone, count + Σ aᵢ ≤ (1 + eps) × L at every instant,
// count being the store's and aᵢ what gateway i would admit with no further
// contact. The aᵢ are whole, so at most B = ⌊(1 + eps) × L − count⌋
// gateways can admit anything alone, and an honest request that reaches
// any other waits on the store (or is refused, which the rejection target
// forbids). The share that waits is at least E[1 − the routing mass of the
// B likeliest gateways]: 1 − B/K under even routing, 1 − H_B/H_K under the
// study's uneven routing (gateway i ∝ 1/i), count being the honest
// client's window as a request finds it. An exact limit makes the window an
// Erlang loss system (L servers, each admit holding one for W), so count
// is Poisson of mean load × L truncated to [0, L] (insensitive to the
// fixed holding time; arrivals see it, being Poisson).
// Syncs are free here and an oracle places the permits, so every real
// design needs more.
// It takes k ≥ 1, limit ≥ 1, load ≥ 0 and eps ≥ 0, and returns NaN for
// anything else.
func RoundTripBound(k int, r sim.Routing, limit int, load, eps float64) float64 {
	if k < 1 || limit < 1 || !(load >= 0) || !(eps >= 0) {
		return math.NaN()
	}
	mean := load * float64(limit)
	var total, mass float64
	p := math.Exp(-mean) // P(N = 0)
	for n := 0; n <= limit; n++ {
		if n > 0 {
			p *= mean / float64(n)
		}
		b := int(math.Floor((1+eps)*float64(limit) - float64(n)))
		total += p * (1 - heldMass(k, r, b))
		mass += p
	}
	return total / mass
}

// heldMass is the routing mass of the b likeliest of k gateways.
func heldMass(k int, r sim.Routing, b int) float64 {
	b = max(min(b, k), 0)
	if r == sim.Even {
		return float64(b) / float64(k)
	}
	var hb, hk float64
	for i := 1; i <= k; i++ {
		if i <= b {
			hb += 1 / float64(i)
		}
		hk += 1 / float64(i)
	}
	return hb / hk
}

// boundTolerance is the worst window's budget the bound is drawn for: the
// own designs' target of 1.10 × L.
const boundTolerance = targetWorstX - 1

// fleetDesigns are the designs whose round trips the fleet section draws
// against the bound.
var fleetDesigns = []string{"lease-ask", "headroom", "permit"}

// fleetTripTargets are the fleet targets for the own designs' honest
// round trips (steady:0.8, Δ ≤ 1 s, both routings), by K.
var fleetTripTargets = map[int]float64{16: 3, 32: 6}

// ranFleet are the designs of s that ran in the fleet part.
func (s section) ranFleet() []string {
	var ds []string
	for _, d := range s.designs {
		if slices.ContainsFunc(s.rows, func(r Row) bool { return r.Part == PartFleet && r.Params.Design == d }) {
			ds = append(ds, d)
		}
	}
	return ds
}

// fleet writes the fleet part: round trips against K and the bound, the
// honest cost and the floods at K = 64 and 128.
func (s section) fleet() {
	if !s.has(PartFleet) {
		return
	}
	ks := append(Gateways[2:len(Gateways):len(Gateways)], FleetGateways...)
	fmt.Fprintf(s.b, "\n## Fleets of up to %d gateways\n\n", ks[len(ks)-1])
	fmt.Fprintf(s.b, "An honest client at %s of L = %d per %v, Δ = %v, on K gateways: round_trip_pct, even / uneven routing, "+
		"beside the lower bound of any design that holds the worst window within %.2f × L (`RoundTripBound`, docs/study.md). "+
		"K up to %d from the honest part (%d seeds of %v), beyond from the fleet part (%d seeds of %v). "+
		"Marked for the own designs: the fleet targets, ≤ 3%% at K = 16 and ≤ 6%% at K = 32.\n\n",
		refHonest, quietLimit, refWindow, refSync, 1+boundTolerance, Gateways[len(Gateways)-1], honestSeeds, honestLength, fleetSeeds, fleetHonestT)
	var head []string
	for _, k := range ks {
		head = append(head, fmt.Sprintf("K=%d", k))
	}
	var tbl [][]string
	charts := map[sim.Routing][]series{}
	designs := s.ranFleet()
	for ci, d := range designs {
		row := []string{d}
		for _, k := range ks {
			row = append(row, s.evenUneven(d, k))
		}
		tbl = append(tbl, row)
		for _, rt := range []sim.Routing{sim.Even, sim.Uneven} {
			if slices.Contains(fleetDesigns, d) {
				charts[rt] = append(charts[rt], s.tripsSeries(d, ks, rt, ci))
			}
		}
	}
	row := []string{"lower bound"}
	for _, k := range ks {
		row = append(row, fmt.Sprintf("%.2f / %.2f", 100*RoundTripBound(k, sim.Even, quietLimit, 0.8, boundTolerance),
			100*RoundTripBound(k, sim.Uneven, quietLimit, 0.8, boundTolerance)))
	}
	writeTable(s.b, append([]string{"design"}, head...), append(tbl, row))
	for _, rt := range []sim.Routing{sim.Even, sim.Uneven} {
		var pts plotter.XYs
		for _, k := range ks {
			pts = append(pts, plotter.XY{X: float64(k), Y: 100 * RoundTripBound(k, rt, quietLimit, 0.8, boundTolerance)})
		}
		srs := append(charts[rt], series{name: "lower bound", pts: pts, line: true, color: len(designs)})
		s.rep.addChart(s.b, fmt.Sprintf("round trips against K, %v routing", rt), chart{file: fmt.Sprintf("fleet_trips_%v.png", rt),
			title:  fmt.Sprintf("%s, %v routing, Δ = %v, L = %d per %v", refHonest, rt, refSync, quietLimit, refWindow),
			xlabel: "gateways K", ylabel: "honest requests that wait on the store (%)", logX: true, series: srs, xticks: floats(ks)})
	}
	s.fleetHonest(designs)
	s.fleetFloods(designs)
}

// evenUneven is d's round_trip_pct at K = k under both routings, marked
// against fleetTripTargets for the own designs.
func (s section) evenUneven(d string, k int) string {
	e, okE := s.t[quietTripsCell(d, k, sim.Even)]
	u, okU := s.t[quietTripsCell(d, k, sim.Uneven)]
	if !okE || !okU {
		return "–"
	}
	if target, ok := fleetTripTargets[k]; ok && slices.Contains(catalog.OwnDesigns, d) {
		return s.mark("%.2f", e.RoundTripPct, target) + " / " + s.mark("%.2f", u.RoundTripPct, target)
	}
	return fmt.Sprintf("%.2f / %.2f", e.RoundTripPct, u.RoundTripPct)
}

// tripsSeries is d's round trips against ks under routing rt.
func (s section) tripsSeries(d string, ks []int, rt sim.Routing, color int) series {
	var pts plotter.XYs
	for _, k := range ks {
		if m, ok := s.t[quietTripsCell(d, k, rt)]; ok {
			pts = append(pts, plotter.XY{X: float64(k), Y: m.RoundTripPct})
		}
	}
	return series{name: d, pts: pts, color: color}
}

// fleetHonest writes the honest rejections at K = 64 and 128 against
// central-log's.
func (s section) fleetHonest(designs []string) {
	fmt.Fprintf(s.b, "\n### %s at K = 64 and 128: rejected_pct (even / uneven) [worst_window_x, the larger]\n\n", refHonest)
	fmt.Fprintf(s.b, "Marked for the own designs: no more than central-log's + %.1f points.\n\n", targetRejectedPP)
	var head []string
	for _, k := range FleetGateways {
		head = append(head, fmt.Sprintf("K=%d", k))
	}
	var tbl [][]string
	for _, d := range designs {
		row := []string{d}
		for _, k := range FleetGateways {
			row = append(row, s.fleetRejected(d, k))
		}
		tbl = append(tbl, row)
	}
	writeTable(s.b, append([]string{"design"}, head...), tbl)
}

// fleetRejected is d's honest rejected_pct at K = k under both routings,
// marked for the own designs against central-log's.
func (s section) fleetRejected(d string, k int) string {
	e, okE := s.t[fleetCell(d, k, refHonest, sim.Even)]
	u, okU := s.t[fleetCell(d, k, refHonest, sim.Uneven)]
	if !okE || !okU {
		return "–"
	}
	worst := fmt.Sprintf(" [%.3f]", math.Max(e.WorstWindowX, u.WorstWindowX))
	ce, okCE := s.t[fleetCell("central-log", k, refHonest, sim.Even)]
	cu, okCU := s.t[fleetCell("central-log", k, refHonest, sim.Uneven)]
	if !slices.Contains(catalog.OwnDesigns, d) || !okCE || !okCU {
		return fmt.Sprintf("%.3f / %.3f", e.RejectedPct, u.RejectedPct) + worst
	}
	return s.mark("%.3f", e.RejectedPct, ce.RejectedPct+targetRejectedPP) + " / " +
		s.mark("%.3f", u.RejectedPct, cu.RejectedPct+targetRejectedPP) + worst
}

// fleetFloods writes every flood at K = 64 and 128.
func (s section) fleetFloods(designs []string) {
	fmt.Fprintf(s.b, "\n### Floods at K = 64 and 128, even routing: worst_window_x [admitted_x]\n\n")
	fmt.Fprintf(s.b, "@N: aimed at N gateways; ~ON/OFF: pulsed; +T: sudden, beside the honest client. Targets for the own designs: "+
		"admitted_x ≤ %.2f and worst_window_x ≤ %.2f.\n\n", targetAdmittedX, targetWorstX)
	var tbl [][]string
	for _, d := range designs {
		own := slices.Contains(catalog.OwnDesigns, d)
		for _, k := range FleetGateways {
			row := []string{d, fmt.Sprint(k)}
			for _, tr := range FleetFloods {
				row = append(row, s.t.fmt(fleetCell(d, k, tr, sim.Even), func(m Mean) string {
					if own {
						return s.mark("%.3f", m.WorstWindowX, targetWorstX) + " [" + s.mark("%.3f", m.AdmittedX, targetAdmittedX) + "]"
					}
					return fmt.Sprintf("%.3f [%.3f]", m.WorstWindowX, m.AdmittedX)
				}))
			}
			tbl = append(tbl, row)
		}
	}
	writeTable(s.b, append([]string{"design", "K"}, FleetFloods...), tbl)
}
