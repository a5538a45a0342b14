package study

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/fleetlimit/fleetlimit/sim"
	"github.com/fleetlimit/fleetlimit/sim/catalog"
	"github.com/fleetlimit/fleetlimit/window"
)

// The targets fleetlimit set its own designs, headroom and permit
// (docs/design.md).
const (
	targetAdmittedX  = 1.02 // floods, every rate
	targetWorstX     = 1.10 // floods, every rate
	targetRejectedPP = 0.1  // honest rejected_pct above central-log's, points
	targetRoundTrips = 3.0  // steady:0.8 round_trip_pct, Δ <= 1 s
	targetBusyTrips  = 0.5  // the busy key's round_trip_pct
	targetTripsSync  = time.Second
	headroomName     = "headroom"
)

// mark writes v with a check when it meets the target (v <= target) and a
// cross when it misses; from a reduced grid, v alone.
func (s section) mark(format string, v, target float64) string {
	if s.reduced {
		return fmt.Sprintf(format, v)
	}
	if v <= target {
		return fmt.Sprintf(format+" ✓", v)
	}
	return fmt.Sprintf(format+" ✗", v)
}

// worstOver returns the largest f over the cells, and false when none is in t.
func (t table) worstOver(cells []Cell, f func(Mean) float64) (float64, bool) {
	worst, any := math.Inf(-1), false
	for _, c := range cells {
		if m, ok := t[c]; ok {
			worst, any = math.Max(worst, f(m)), true
		}
	}
	return worst, any
}

// headroomFloods are the flood cells of d at K = k, Δ = sync.
func (s section) headroomFloods(d string, k int, sync time.Duration) []Cell {
	var cs []Cell
	for _, m := range s.rates {
		cs = append(cs, Cell{PartFlood, d, k, sync, quietLimit, refWindow, window.Sliding, 0, floodSpec(m), sim.Even, ""})
	}
	return cs
}

// honestExcess is the most by which d's honest rejected_pct passes
// central-log's over the honest traffics and routings at K = k, Δ = sync.
func (s section) honestExcess(d string, k int, sync time.Duration) (float64, bool) {
	worst, any := math.Inf(-1), false
	for _, tr := range HonestTraffic {
		for _, rt := range []sim.Routing{sim.Even, sim.Uneven} {
			c := Cell{PartHonest, d, k, sync, quietLimit, refWindow, window.Sliding, 0, tr, rt, ""}
			m, ok := s.t[c]
			c.Design = "central-log"
			base, okBase := s.t[c]
			if ok && okBase {
				worst, any = math.Max(worst, m.RejectedPct-base.RejectedPct), true
			}
		}
	}
	return worst, any
}

// headroom writes each of fleetlimit's own designs on the study's grid
// against the targets they were built to, then every design on them.
func (s section) headroom() {
	any := false
	for _, d := range catalog.OwnDesigns {
		if slices.Contains(s.designs, d) {
			s.targets(d)
			any = true
		}
	}
	if any {
		s.againstTheStudy()
	}
}

// targets writes own design d's figures against the targets, each marked
// met (✓) or missed (✗).
func (s section) targets(d string) {
	ks := presentInts(s.rows, func(r Row) (int, bool) { return r.Params.Gateways, r.Part == PartFlood })
	syncs := presentDurations(s.rows, PartFlood)
	fmt.Fprintf(s.b, "## %s against its targets\n\n", d)
	fmt.Fprintf(s.b, "Per K and Δ: the most admitted_x and worst_window_x over every flood rate (even routing); the most by which "+
		"honest rejected_pct passes central-log's over every honest traffic and both routings (points); round_trip_pct under %s, "+
		"the larger of the two routings. Targets: admitted_x ≤ %.2f, worst_window_x ≤ %.2f, rejections ≤ central-log + %.1f, "+
		"round trips ≤ %.0f%% at Δ ≤ %v (reported, not targeted, above).\n\n",
		refHonest, targetAdmittedX, targetWorstX, targetRejectedPP, targetRoundTrips, targetTripsSync)
	head := []string{"K", "Δ", "floods: admitted_x", "floods: worst_window_x", "honest: rejected − central-log", "steady:0.8: round_trip_pct"}
	var rows [][]string
	for _, k := range ks {
		for _, sync := range syncs {
			row := []string{fmt.Sprint(k), sync.String()}
			floods := s.headroomFloods(d, k, sync)
			if v, ok := s.t.worstOver(floods, func(m Mean) float64 { return m.AdmittedX }); ok {
				row = append(row, s.mark("%.3f", v, targetAdmittedX))
			} else {
				row = append(row, "–")
			}
			if v, ok := s.t.worstOver(floods, func(m Mean) float64 { return m.WorstWindowX }); ok {
				row = append(row, s.mark("%.3f", v, targetWorstX))
			} else {
				row = append(row, "–")
			}
			if v, ok := s.honestExcess(d, k, sync); ok {
				row = append(row, s.mark("%+.2f", v, targetRejectedPP))
			} else {
				row = append(row, "–")
			}
			row = append(row, s.roundTripsOf(d, k, sync))
			rows = append(rows, row)
		}
	}
	writeTable(s.b, head, rows)
	s.b.WriteString("\n")
	s.busyTrips(d)
}

// againstTheStudy writes every design on headroom's targets, one table per
// figure, rows K and Δ, so that headroom reads beside the study's seven on
// the same runs.
func (s section) againstTheStudy() {
	ks := presentInts(s.rows, func(r Row) (int, bool) { return r.Params.Gateways, r.Part == PartFlood })
	syncs := presentDurations(s.rows, PartFlood)
	type figure struct {
		title string
		cell  func(d string, k int, sync time.Duration) string
	}
	worst := func(f func(Mean) float64, target float64) func(string, int, time.Duration) string {
		return func(d string, k int, sync time.Duration) string {
			if v, ok := s.t.worstOver(s.headroomFloods(d, k, sync), f); ok {
				return s.mark("%.3f", v, target)
			}
			return "–"
		}
	}
	figures := []figure{
		{fmt.Sprintf("floods: the most admitted_x over every rate (target ≤ %.2f)", targetAdmittedX),
			worst(func(m Mean) float64 { return m.AdmittedX }, targetAdmittedX)},
		{fmt.Sprintf("floods: the most worst_window_x over every rate (target ≤ %.2f)", targetWorstX),
			worst(func(m Mean) float64 { return m.WorstWindowX }, targetWorstX)},
		{fmt.Sprintf("honest: the most rejected_pct above central-log's, points (target ≤ %.1f)", targetRejectedPP),
			func(d string, k int, sync time.Duration) string {
				if v, ok := s.honestExcess(d, k, sync); ok {
					return s.mark("%+.2f", v, targetRejectedPP)
				}
				return "–"
			}},
		{fmt.Sprintf("%s: round_trip_pct, the larger routing (target ≤ %.0f%% at Δ ≤ %v)", refHonest, targetRoundTrips, targetTripsSync),
			func(d string, k int, sync time.Duration) string { return s.roundTripsOf(d, k, sync) }},
	}
	fmt.Fprintf(s.b, "### Every design on the own designs' targets\n\n")
	for _, f := range figures {
		fmt.Fprintf(s.b, "#### %s\n\n", f.title)
		head := append([]string{"K", "Δ"}, s.designs...)
		var rows [][]string
		for _, k := range ks {
			for _, sync := range syncs {
				row := []string{fmt.Sprint(k), sync.String()}
				for _, d := range s.designs {
					row = append(row, f.cell(d, k, sync))
				}
				rows = append(rows, row)
			}
		}
		writeTable(s.b, head, rows)
		s.b.WriteString("\n")
	}
}

// roundTripsOf is design d's steady:0.8 round_trip_pct cell at K = k, Δ = sync.
func (s section) roundTripsOf(d string, k int, sync time.Duration) string {
	var cells []Cell
	for _, rt := range []sim.Routing{sim.Even, sim.Uneven} {
		cells = append(cells, Cell{PartHonest, d, k, sync, quietLimit, refWindow, window.Sliding, 0, refHonest, rt, ""})
	}
	v, ok := s.t.worstOver(cells, func(m Mean) float64 { return m.RoundTripPct })
	switch {
	case !ok:
		return "–"
	case sync > targetTripsSync:
		return fmt.Sprintf("%.2f", v)
	}
	return s.mark("%.2f", v, targetRoundTrips)
}

// busyTrips writes own design d's round trips on the busy key.
func (s section) busyTrips(d string) {
	ks := presentInts(s.rows, func(r Row) (int, bool) { return r.Params.Gateways, r.Part == PartBusy })
	syncs := presentDurations(s.rows, PartBusy)
	if len(ks) == 0 {
		return
	}
	fmt.Fprintf(s.b, "### %s's round_trip_pct on the busy key (L = %d, %s, the larger of the two routings; target ≤ %.1f%%)\n\n",
		d, BusyLimit, refHonest, targetBusyTrips)
	head := []string{"K"}
	for _, d := range syncs {
		head = append(head, "Δ="+d.String())
	}
	var rows [][]string
	for _, k := range ks {
		row := []string{fmt.Sprint(k)}
		for _, sync := range syncs {
			var cells []Cell
			for _, rt := range []sim.Routing{sim.Even, sim.Uneven} {
				cells = append(cells, Cell{PartBusy, d, k, sync, BusyLimit, refWindow, window.Sliding, 0, refHonest, rt, ""})
			}
			if v, ok := s.t.worstOver(cells, func(m Mean) float64 { return m.RoundTripPct }); ok {
				row = append(row, s.mark("%.2f", v, targetBusyTrips))
			} else {
				row = append(row, "–")
			}
		}
		rows = append(rows, row)
	}
	writeTable(s.b, head, rows)
	s.b.WriteString("\n")
}
