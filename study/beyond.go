package study

import (
	"fmt"
	"math"
	"strings"
	"time"

	"gonum.org/v1/plot/plotter"

	"github.com/fleetlimit/fleetlimit/sim"
	"github.com/fleetlimit/fleetlimit/window"
)

// beyondCell is a scenario of the beyond part at Δ = 1 s, L = 100.
func beyondCell(d string, k int, tr string, routing sim.Routing, f sim.Faults) Cell {
	return Cell{PartBeyond, d, k, refSync, quietLimit, refWindow, window.Sliding, 0, tr, routing, f.String()}
}

func floodCell(d string, f sim.Faults) Cell {
	return beyondCell(d, refK, beyondFlood, sim.Even, f)
}

func honestFaultCell(d string, f sim.Faults) Cell {
	return beyondCell(d, refK, refHonest, sim.Uneven, f)
}

// seedLaw is the seed's law for an even flood on n gateways: admitted_x =
// 1 + (n-1)/n · x, x being the flood of one sync interval in units of L.
func seedLaw(x float64, n int) float64 { return 1 + float64(n-1)/float64(n)*x }

// beyondX is x of the beyond part's flood.
func beyondX() float64 {
	tr, _ := sim.ParseTraffic(beyondFlood)
	return floodX(tr.Factor, refSync, refWindow)
}

// beyond writes the part past the study's caveats.
func (s section) beyond() {
	if !s.has(PartBeyond) {
		return
	}
	fmt.Fprintf(s.b, "\n## Beyond the study's caveats\n\n")
	fmt.Fprintf(s.b, "The study's model has one key, floods spread evenly, an instant store that never fails and one clock. "+
		"This part runs every design past each of those (K = %d, Δ = %v, L = %d, %d seeds per scenario; floods %v long, "+
		"honest runs %v). x = M·Δ/W is the flood that arrives in one sync interval, in units of L; "+
		"\"the seed's law\" below is the linear law defined under Floods, `admitted_x = 1 + (K−1)/K · x`, which holds for a small x "+
		"only (here x = %.2f).\n\n",
		refK, refSync, quietLimit, beyondSeeds, beyondFloodT, beyondHonestT, beyondX())
	s.targeted()
	s.pulsed()
	s.sudden()
	s.store("Store round trips", "rtt", s.rtts(), "store round trip (ms)", "worst_window_x_rtt.png")
	s.store("Lost syncs", "loss", s.losses(), "syncs lost (%)", "worst_window_x_loss.png")
	s.restarts()
	s.members()
}

func (s section) has(part string) bool {
	for _, r := range s.rows {
		if r.Part == part {
			return true
		}
	}
	return false
}

// targeted writes floods aimed at n of the K gateways, and checks the seed's
// law with n in place of K.
func (s section) targeted() {
	x := floodX(100, refSync, refWindow)
	for _, k := range BeyondTargetKs {
		ns := Targets(k)
		var head []string
		for _, n := range ns {
			head = append(head, fmt.Sprintf("n=%d", n))
		}
		fmt.Fprintf(s.b, "### Floods aimed at n of K = %d gateways: admitted_x [worst_window_x] (%s@n)\n\n", k, beyondFlood)
		ser := s.byDesign(head, floats(ns), func(d string, i int) Cell {
			return beyondCell(d, k, fmt.Sprintf("%s@%d", beyondFlood, ns[i]), sim.Even, sim.Faults{})
		}, func(m Mean) string { return fmt.Sprintf("%.3f [%.2f]", m.AdmittedX, m.WorstWindowX) }, func(m Mean) float64 { return m.AdmittedX })
		if k != refK {
			s.b.WriteString("\n")
		} else {
			s.rep.addChart(s.b, "admitted against the gateways a flood reaches", chart{file: "targeted_k8.png",
				title: fmt.Sprintf("%s aimed at n of K = %d gateways, Δ = %v, L = %d per %v", beyondFlood, k, refSync, quietLimit, refWindow), xlabel: "gateways the flood reaches, n",
				ylabel: "admitted_x (x L)", logX: true, xticks: floats(ns), series: ser, headroom: true, multiples: true})
		}
		var b strings.Builder
		var worst float64
		for _, n := range ns {
			m, ok := s.t[beyondCell("shared-counter", k, fmt.Sprintf("%s@%d", beyondFlood, n), sim.Even, sim.Faults{})]
			if !ok {
				continue
			}
			law := seedLaw(x, n)
			e := (m.AdmittedX - law) / law
			worst = math.Max(worst, math.Abs(e))
			fmt.Fprintf(&b, "n = %d: %.3f measured, %.3f by the law (%+.1f%%); ", n, m.AdmittedX, law, 100*e)
		}
		if b.Len() > 0 {
			fmt.Fprintf(s.b, "shared-counter against the seed's law with n in place of K (x = %.2f): %s", x, strings.TrimSuffix(b.String(), "; "))
			verdict := "the law holds with K read as the number of gateways the flood reaches"
			if worst > 0.05 {
				verdict = "the law, with K read as the gateways the flood reaches, is off by more than 5% somewhere"
			}
			fmt.Fprintf(s.b, ". Worst error %.1f%%: %s. An attacker who picks one gateway meets one gateway's exact count: shared-counter "+
				"admits as a single gateway would. %s\n\n", 100*worst, verdict, s.targetedFinding(k))
		}
	}
}

// targetedFinding names the design a one-gateway attacker gains most
// against, compared with the even flood.
func (s section) targetedFinding(k int) string {
	best, gain, from, to := "", 0.0, 0.0, 0.0
	for _, d := range s.designs {
		one, ok1 := s.t[beyondCell(d, k, beyondFlood+"@1", sim.Even, sim.Faults{})]
		all, ok2 := s.t[beyondCell(d, k, fmt.Sprintf("%s@%d", beyondFlood, k), sim.Even, sim.Faults{})]
		if ok1 && ok2 && one.AdmittedX-all.AdmittedX > gain {
			best, gain, from, to = d, one.AdmittedX-all.AdmittedX, all.AdmittedX, one.AdmittedX
		}
	}
	if best == "" {
		return "No design admits more when the flood is aimed at one gateway than when it is spread over all."
	}
	return fmt.Sprintf("Aiming at one gateway helps the attacker most against %s: admitted_x %.3f spread over all %d, %.3f at one.", best, from, k, to)
}

// pulsed writes pulsed floods.
func (s section) pulsed() {
	fmt.Fprintf(s.b, "### Pulsed floods: admitted_x [worst_window_x] (K = %d; ON/OFF repeating, at the rate while on)\n\n", refK)
	head := append([]string{beyondFlood + " (steady)"}, BeyondPulses...)
	specs := append([]string{beyondFlood}, BeyondPulses...)
	s.byDesign(head, make([]float64, len(head)), func(d string, i int) Cell {
		if i == 0 {
			return floodCell(d, sim.Faults{})
		}
		return beyondCell(d, refK, specs[i], sim.Even, sim.Faults{})
	}, func(m Mean) string { return fmt.Sprintf("%.3f [%.2f]", m.AdmittedX, m.WorstWindowX) }, func(m Mean) float64 { return 0 })
	best, bx, bn := "", 0.0, ""
	for _, d := range s.designs {
		for _, p := range BeyondPulses {
			if m, ok := s.t[beyondCell(d, refK, p, sim.Even, sim.Faults{})]; ok && m.WorstWindowX > bx {
				best, bx, bn = d, m.WorstWindowX, p
			}
		}
	}
	if best != "" {
		fmt.Fprintf(s.b, "\nA pulse arrives all at once on views that are up to Δ old; the worst window of any design under a pulse is %s's under %s: %.2f × L.\n\n", best, bn, bx)
	}
}

// sudden writes a flood that starts on a key with honest traffic.
func (s section) sudden() {
	fmt.Fprintf(s.b, "### A sudden flood on an honest key (%s, uneven, and %s from %v, even or at one gateway)\n\n", refHonest, beyondFlood, beyondAttack)
	fmt.Fprintf(s.b, "The honest client's rejected_pct before the flood and during it, and attack_window_x, the worst window that holds the flood's start.\n\n")
	head := []string{"design", "even: before", "even: during", "even: attack_window_x", "@1: before", "@1: during", "@1: attack_window_x"}
	var tbl [][]string
	for _, d := range s.designs {
		row := []string{d}
		for _, target := range []string{"", "@1"} {
			c := beyondCell(d, refK, fmt.Sprintf("%s,%s%s+%v", refHonest, beyondFlood, target, beyondAttack), sim.Uneven, sim.Faults{})
			m, ok := s.t[c]
			if !ok {
				row = append(row, "–", "–", "–")
				continue
			}
			row = append(row, fmt.Sprintf("%.2f", m.FirstBeforePct), fmt.Sprintf("%.2f", m.FirstAfterPct), fmt.Sprintf("%.3f", m.AttackWindowX))
		}
		tbl = append(tbl, row)
	}
	writeTable(s.b, head, tbl)
	s.b.WriteString(s.suddenFinding())
}

// suddenFinding says what the flood costs the honest client: with the flood
// spread evenly, every design shares one count among all of a key's callers;
// aimed at one gateway, the designs differ.
func (s section) suddenFinding() string {
	lo, hi := math.Inf(1), 0.0
	best, bestV, worst, worstV := "", math.Inf(1), "", 0.0
	for _, d := range s.designs {
		if m, ok := s.t[beyondCell(d, refK, fmt.Sprintf("%s,%s+%v", refHonest, beyondFlood, beyondAttack), sim.Uneven, sim.Faults{})]; ok {
			lo, hi = math.Min(lo, m.FirstAfterPct), math.Max(hi, m.FirstAfterPct)
		}
		if m, ok := s.t[beyondCell(d, refK, fmt.Sprintf("%s,%s@1+%v", refHonest, beyondFlood, beyondAttack), sim.Uneven, sim.Faults{})]; ok {
			if m.FirstAfterPct < bestV {
				best, bestV = d, m.FirstAfterPct
			}
			if m.FirstAfterPct > worstV {
				worst, worstV = d, m.FirstAfterPct
			}
		}
	}
	if math.IsInf(lo, 1) || best == "" {
		return "\n"
	}
	return fmt.Sprintf("\nSpread over every gateway, the flood takes the honest client's share of the key under every design alike "+
		"(%.1f–%.1f%% of its requests rejected once it starts): each shares one count among all callers of a key and cannot tell them apart. "+
		"Aimed at one gateway, the designs differ: the honest client keeps most under %s (%.1f%% rejected during the attack) and least "+
		"under %s (%.1f%%); the designs that count the fleet's admits exactly hand the attacker the whole limit, the local ones cap it at "+
		"that gateway's share.\n\n", lo, hi, best, bestV, worst, worstV)
}

// faultAxis is one axis of store faults: its label and Faults per point.
type faultAxis struct {
	xs     []float64
	labels []string
	faults []sim.Faults
}

func (s section) rtts() faultAxis {
	a := faultAxis{xs: []float64{0}, labels: []string{"instant"}, faults: []sim.Faults{{}}}
	for _, d := range BeyondRTTs {
		a.xs = append(a.xs, float64(d)/float64(time.Millisecond))
		a.labels = append(a.labels, d.String())
		a.faults = append(a.faults, sim.Faults{RTT: d})
	}
	return a
}

func (s section) losses() faultAxis {
	a := faultAxis{xs: []float64{0}, labels: []string{"none"}, faults: []sim.Faults{{}}}
	for _, l := range BeyondLosses {
		a.xs = append(a.xs, 100*l)
		a.labels = append(a.labels, ff(100*l)+"%")
		a.faults = append(a.faults, sim.Faults{Loss: l})
	}
	return a
}

// store writes the flood and honest figures along one axis of store faults.
func (s section) store(title, name string, a faultAxis, xlabel, file string) {
	fmt.Fprintf(s.b, "### %s: %s worst_window_x [admitted_x], and %s uneven rejected_pct [round_trip_pct] (K = %d)\n\n", title, beyondFlood, refHonest, refK)
	var head []string
	for _, l := range a.labels {
		head = append(head, "flood "+l)
	}
	for _, l := range a.labels {
		head = append(head, "honest "+l)
	}
	var tbl [][]string
	var ser []series
	for ci, d := range s.designs {
		row := []string{d}
		var pts plotter.XYs
		for i, f := range a.faults {
			c := floodCell(d, f)
			row = append(row, s.t.fmt(c, func(m Mean) string { return fmt.Sprintf("%.2f [%.3f]", m.WorstWindowX, m.AdmittedX) }))
			if m, ok := s.t[c]; ok {
				pts = append(pts, plotter.XY{X: a.xs[i], Y: m.WorstWindowX})
			}
		}
		for _, f := range a.faults {
			row = append(row, s.t.fmt(honestFaultCell(d, f), func(m Mean) string { return fmt.Sprintf("%.3f [%.1f]", m.RejectedPct, m.RoundTripPct) }))
		}
		tbl = append(tbl, row)
		ser = append(ser, series{name: d, pts: pts, color: ci})
	}
	writeTable(s.b, append([]string{"design"}, head...), tbl)
	s.rep.addChart(s.b, "worst window against "+name, chart{file: file, title: fmt.Sprintf("%s spread evenly, K = %d, Δ = %v, L = %d per %v", beyondFlood, refK, refSync, quietLimit, refWindow),
		xlabel: xlabel, ylabel: "worst_window_x: most admitted in any W (x L)", xticks: a.xs, series: ser, headroom: true, multiples: true})
	s.b.WriteString(s.storeFinding(a))
}

// storeFinding says in words what the last point of a fault axis does to
// each design's worst window, against the ideal store.
func (s section) storeFinding(a faultAxis) string {
	last := a.faults[len(a.faults)-1]
	var moved, held []string
	for _, d := range s.designs {
		base, ok1 := s.t[floodCell(d, sim.Faults{})]
		f, ok2 := s.t[floodCell(d, last)]
		if !ok1 || !ok2 {
			continue
		}
		if math.Abs(f.WorstWindowX-base.WorstWindowX) >= 0.05 {
			moved = append(moved, fmt.Sprintf("%s %.2f → %.2f", d, base.WorstWindowX, f.WorstWindowX))
		} else {
			held = append(held, d)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\nAt %s, against the ideal store, the worst window under the flood", last)
	if len(moved) > 0 {
		fmt.Fprintf(&b, " moves for %s", strings.Join(moved, ", "))
	}
	if len(held) > 0 {
		if len(moved) > 0 {
			b.WriteString(", and")
		}
		fmt.Fprintf(&b, " stays within 0.05 × L for %s", strings.Join(held, ", "))
	}
	b.WriteString(". ")
	if m, ok := s.t[floodCell("shared-counter", last)]; ok {
		// the seed's law with the staleness the fault adds: a round trip
		// adds about one to the age of what a gateway knows; a sync
		// fails when its push or its pull is lost, which stretches the
		// mean interval between the syncs that count
		x, how := floodX(100, refSync+last.RTT, refWindow), "the sync interval lengthened by the round trip"
		if last.Loss > 0 {
			fail := 1 - (1-last.Loss)*(1-last.Loss)
			x, how = floodX(100, refSync, refWindow)/(1-fail), "the sync interval stretched by the failed syncs, Δ/(1−(1−p)²)"
		}
		law := seedLaw(x, refK)
		fmt.Fprintf(&b, "shared-counter admits %.3f × L there; the seed's law with %s says %.3f (%+.1f%%).",
			m.AdmittedX, how, law, 100*(m.AdmittedX-law)/law)
	}
	b.WriteString("\n\n")
	return b.String()
}

// restarts writes the fleet restarting under a flood and under honest
// traffic.
func (s section) restarts() {
	f := sim.Faults{Restarts: BeyondRestarts}
	fmt.Fprintf(s.b, "### Restarts: the whole fleet loses its state at %s\n\n", restartTimes())
	head := []string{"design", "flood: worst_window_x", "flood: admitted_x", "no restart: worst_window_x", "honest: rejected_pct", "no restart: rejected_pct"}
	var tbl [][]string
	for _, d := range s.designs {
		tbl = append(tbl, []string{d, s.t.fmt(floodCell(d, f), func(m Mean) string { return fmt.Sprintf("%.2f", m.WorstWindowX) }),
			s.t.fmt(floodCell(d, f), admitted),
			s.t.fmt(floodCell(d, sim.Faults{}), func(m Mean) string { return fmt.Sprintf("%.2f", m.WorstWindowX) }),
			s.t.fmt(honestFaultCell(d, f), func(m Mean) string { return fmt.Sprintf("%.3f", m.RejectedPct) }),
			s.t.fmt(honestFaultCell(d, sim.Faults{}), func(m Mean) string { return fmt.Sprintf("%.3f", m.RejectedPct) })})
	}
	writeTable(s.b, head, tbl)
	s.b.WriteString("\nA restart loses the admits made since the last sync (at most one interval's) and the lease slots held, which the store " +
		"keeps counted until the gateway's next push settles them: the designs that admit before they sync can over-admit by what " +
		"one interval lets through, the leases strand their slots for one interval instead.\n\n")
}

// members writes the fleet's changes of size: floods and honest traffic
// beside the same runs with a fixed fleet.
func (s section) members() {
	f := sim.Faults{Members: BeyondMembers}
	fmt.Fprintf(s.b, "### A fleet that changes: %s (K = %d at the start; a newcomer, then crashes)\n\n", sim.MembersString(BeyondMembers), refK)
	ww := func(m Mean) string { return fmt.Sprintf("%.2f", m.WorstWindowX) }
	rej := func(m Mean) string { return fmt.Sprintf("%.3f", m.RejectedPct) }
	head := []string{"design", "flood: worst_window_x", "flood: admitted_x", "fixed fleet: worst_window_x", "fixed fleet: admitted_x",
		"honest: rejected_pct", "fixed fleet: rejected_pct"}
	var tbl [][]string
	worst, worstD := 0.0, ""
	for _, d := range s.designs {
		tbl = append(tbl, []string{d, s.t.fmt(floodCell(d, f), ww), s.t.fmt(floodCell(d, f), admitted),
			s.t.fmt(floodCell(d, sim.Faults{}), ww), s.t.fmt(floodCell(d, sim.Faults{}), admitted),
			s.t.fmt(honestFaultCell(d, f), rej), s.t.fmt(honestFaultCell(d, sim.Faults{}), rej)})
		a, ok1 := s.t[floodCell(d, f)]
		b, ok2 := s.t[floodCell(d, sim.Faults{})]
		if ok1 && ok2 && a.WorstWindowX-b.WorstWindowX > worst {
			worst, worstD = a.WorstWindowX-b.WorstWindowX, d
		}
	}
	writeTable(s.b, head, tbl)
	fmt.Fprintf(s.b, "\nThe gateways learn each change at their membership heartbeats (every %v; a crashed member is forgotten %v after its "+
		"last), make their designs anew under the new K, keeping their local quotas' history, and settle the crashed members' lease "+
		"slots at their syncs. The crashes lose what was not pushed, as restarts do. ", (sim.DefaultMemberTTL / 3).Round(time.Millisecond), sim.DefaultMemberTTL)
	if worstD != "" {
		fmt.Fprintf(s.b, "The largest rise of a flood's worst window over the fixed fleet's is %s's, %.2f L: while some gateways still "+
			"decide with the old K, the quotas of the old and the new fleet add up.", worstD, worst)
	} else {
		s.b.WriteString("No flood's worst window rises over the fixed fleet's.")
	}
	s.b.WriteString("\n\n")
}

func restartTimes() string {
	var ts []string
	for _, r := range BeyondRestarts {
		ts = append(ts, r.At.String())
	}
	return strings.Join(ts, ", ")
}
