package study

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/fleetlimit/fleetlimit/sim"
	"github.com/fleetlimit/fleetlimit/window"
)

// What the decision table asks of a design at one K and Δ: the most it may
// admit in a window under any of the grid's even floods, and the most its
// honest rejections may pass central-log's (the exact design's), points.
const (
	decideWorstX   = 1.10
	decideExcessPP = 0.5
)

// reduced reports whether rows are thinner than the study's grid: fewer
// seeds a scenario, or fewer fleet sizes or sync intervals. Verdicts are
// not drawn from such a grid.
func reduced(t table) bool {
	ks, syncs := map[int]bool{}, map[time.Duration]bool{}
	for c, m := range t {
		if c.Part != PartHonest {
			continue
		}
		if m.Seeds < honestSeeds {
			return true
		}
		ks[c.Gateways], syncs[c.Sync] = true, true
	}
	return len(ks) < len(Gateways) || len(syncs) < len(Syncs)
}

// conclusions writes the report's opening: what the run found, in figures
// of this run, and the decision table. A reduced grid gets the figures and
// a warning, and no verdicts.
func (s section) conclusions() {
	fmt.Fprintf(s.b, "## What this run found\n\n")
	if s.reduced {
		fmt.Fprintf(s.b, "**This is a reduced grid**: fewer seeds a scenario, fleet sizes or sync intervals than the study's "+
			"(`study --quick`, or `--filter`). Its figures are a first look, noisier than the full grid's; no ✓ or ✗ is drawn "+
			"from it, and the decision table needs the full grid (`fleetlimit study --out DIR`).\n\n")
	}
	var found []string
	for _, f := range []func() string{s.floodFinding, s.honestFinding, s.tripsFinding, s.scaleFinding} {
		if line := f(); line != "" {
			found = append(found, line)
		}
	}
	for _, line := range found {
		fmt.Fprintf(s.b, "- %s\n", line)
	}
	s.b.WriteString("\n")
	if !s.reduced {
		s.decisionTable()
	}
}

// refFlood is design d's flood cell at K, Δ and rate m (even routing).
func refFlood(d string, k int, sync time.Duration, m float64) Cell {
	return Cell{PartFlood, d, k, sync, quietLimit, refWindow, window.Sliding, 0, floodSpec(m), sim.Even, ""}
}

// floodFinding: at the reference K and Δ under the heaviest flood, which
// designs hold L and how far the others pass it.
func (s section) floodFinding() string {
	if len(s.rates) == 0 {
		return ""
	}
	m := s.rates[len(s.rates)-1]
	var held, passed []string
	worst, worstD := 0.0, ""
	for _, d := range s.designs {
		v, ok := s.t[refFlood(d, refK, refSync, m)]
		if !ok {
			continue
		}
		if v.WorstWindowX <= decideWorstX {
			held = append(held, d)
		} else {
			passed = append(passed, fmt.Sprintf("%s %.2f", d, v.WorstWindowX))
		}
		if v.WorstWindowX > worst {
			worst, worstD = v.WorstWindowX, d
		}
	}
	if worstD == "" {
		return ""
	}
	return fmt.Sprintf("**Floods.** Under %s spread over K = %d gateways at Δ = %v, %s keep every window within %.2f × L; "+
		"the others pass it (worst window × L: %s). The worst is %s at %.2f × L: each gateway admits until it hears of the others.",
		floodSpec(m), refK, refSync, list(held), decideWorstX, strings.Join(passed, ", "), worstD, worst)
}

// honestFinding: what each design costs an honest client at the reference
// K and Δ under steady traffic at 80% of L, uneven routing, beside the
// exact design.
func (s section) honestFinding() string {
	c := Cell{PartHonest, "central-log", refK, refSync, quietLimit, refWindow, window.Sliding, 0, refHonest, sim.Uneven, ""}
	base, ok := s.t[c]
	if !ok {
		return ""
	}
	var worse []string
	for _, d := range s.designs {
		c.Design = d
		if v, ok := s.t[c]; ok && v.RejectedPct-base.RejectedPct > decideExcessPP {
			worse = append(worse, fmt.Sprintf("%s %.2f%%", d, v.RejectedPct))
		}
	}
	line := fmt.Sprintf("**Honest clients.** At %s with uneven routing (K = %d, Δ = %v) the exact design rejects %.2f%% of an "+
		"honest client's requests (the window's own variance)", refHonest, refK, refSync, base.RejectedPct)
	if len(worse) == 0 {
		return line + fmt.Sprintf("; no design rejects more than %.1f points above it.", decideExcessPP)
	}
	return line + fmt.Sprintf("; these reject more than %.1f points above it: %s.", decideExcessPP, strings.Join(worse, ", "))
}

// tripsFinding: the store round trips an honest client waits on, per
// design, at the reference K and Δ.
func (s section) tripsFinding() string {
	c := Cell{PartHonest, "", refK, refSync, quietLimit, refWindow, window.Sliding, 0, refHonest, sim.Uneven, ""}
	var parts []string
	for _, d := range s.designs {
		c.Design = d
		if v, ok := s.t[c]; ok && v.RoundTripPct > 0.05 {
			parts = append(parts, fmt.Sprintf("%s %.1f%%", d, v.RoundTripPct))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf("**Round trips.** The honest requests that wait on the store at the same point: %s; the others decide "+
		"every request locally.", strings.Join(parts, ", "))
}

// scaleFinding: how the exact-but-cheap designs' round trips grow with the
// fleet on a quiet key, the open problem.
func (s section) scaleFinding() string {
	ks := presentInts(s.rows, func(r Row) (int, bool) { return r.Params.Gateways, r.Part == PartHonest })
	if len(ks) < 2 {
		return ""
	}
	last := ks[len(ks)-1]
	if s.has(PartFleet) {
		last = FleetGateways[len(FleetGateways)-1]
	}
	var parts []string
	for _, d := range fleetDesigns {
		var at []string
		for _, k := range []int{ks[0], last} {
			if v, ok := s.t[quietTripsCell(d, k, sim.Uneven)]; ok {
				at = append(at, fmt.Sprintf("%.1f%% at K = %d", v.RoundTripPct, k))
			}
		}
		if len(at) == 2 {
			parts = append(parts, d+" "+strings.Join(at, " and "))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf("**Fleet size.** The designs that hold floods without asking the store on every request ask it more "+
		"as the fleet grows on a quiet key (L = %d, %s, uneven, Δ = %v): %s.", quietLimit, refHonest, refSync, strings.Join(parts, "; "))
}

// decisionTable writes, for each K and Δ of the grid, the design that holds
// every even flood within decideWorstX × L and costs honest clients no more
// than decideExcessPP points of rejections above the exact design, with the
// fewest round trips; its cost beside it.
func (s section) decisionTable() {
	ks := presentInts(s.rows, func(r Row) (int, bool) { return r.Params.Gateways, r.Part == PartFlood })
	syncs := presentDurations(s.rows, PartFlood)
	if len(ks) == 0 || len(syncs) == 0 {
		return
	}
	fmt.Fprintf(s.b, "### Which design, by fleet size, sync interval and threat\n\n"+
		"For each K and Δ: of the designs that keep every window within %.2f × L (under every honest traffic of the grid, and for "+
		"\"floods\" under every flood too, %s to %s spread evenly) and reject no more than %.1f points "+
		"of honest traffic above central-log's (every honest traffic, both routings), the one whose honest requests wait least "+
		"on the store; in brackets its round trips and rejections at %s, uneven. A flood aimed at some gateways, store round "+
		"trips and lost syncs change the answer: see the beyond part.\n\n",
		decideWorstX, floodSpec(s.rates[0]), floodSpec(s.rates[len(s.rates)-1]), decideExcessPP, refHonest)
	head := []string{"K", "threat"}
	for _, sync := range syncs {
		head = append(head, "Δ = "+sync.String())
	}
	var rows [][]string
	for _, k := range ks {
		for _, floods := range []bool{true, false} {
			row := []string{fmt.Sprint(k), "floods"}
			if !floods {
				row[1] = "honest only"
			}
			for _, sync := range syncs {
				row = append(row, s.choose(k, sync, floods))
			}
			rows = append(rows, row)
		}
	}
	writeTable(s.b, head, rows)
	s.b.WriteString("\n")
}

// choose is the decision table's cell at K = k, Δ = sync: against every
// flood of the grid, or (floods false) for honest traffic alone, which the
// design must also keep within decideWorstX × L.
func (s section) choose(k int, sync time.Duration, floods bool) string {
	best, bestTrips := "", math.Inf(1)
	var bestH Mean
	for _, d := range s.designs {
		cells := s.honestCells(d, k, sync)
		if floods {
			cells = append(cells, s.headroomFloods(d, k, sync)...)
		}
		worst, ok := s.t.worstOver(cells, func(m Mean) float64 { return m.WorstWindowX })
		if !ok || worst > decideWorstX {
			continue
		}
		excess, ok := s.honestExcess(d, k, sync)
		if !ok || excess > decideExcessPP {
			continue
		}
		h, ok := s.t[Cell{PartHonest, d, k, sync, quietLimit, refWindow, window.Sliding, 0, refHonest, sim.Uneven, ""}]
		if ok && (h.RoundTripPct < bestTrips || h.RoundTripPct == bestTrips && h.RejectedPct < bestH.RejectedPct) {
			best, bestTrips, bestH = d, h.RoundTripPct, h
		}
	}
	if best == "" {
		return "none"
	}
	return fmt.Sprintf("%s (%.1f%%, %.2f%%)", best, bestH.RoundTripPct, bestH.RejectedPct)
}

// honestCells are design d's honest cells at K = k, Δ = sync: every
// honest traffic and both routings.
func (s section) honestCells(d string, k int, sync time.Duration) []Cell {
	var cs []Cell
	for _, tr := range HonestTraffic {
		for _, rt := range []sim.Routing{sim.Even, sim.Uneven} {
			cs = append(cs, Cell{PartHonest, d, k, sync, quietLimit, refWindow, window.Sliding, 0, tr, rt, ""})
		}
	}
	return cs
}

// list joins names with commas and "and".
func list(names []string) string {
	switch len(names) {
	case 0:
		return "no design"
	case 1:
		return names[0]
	}
	return strings.Join(slices.Clone(names[:len(names)-1]), ", ") + " and " + names[len(names)-1]
}
