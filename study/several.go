package study

import (
	"fmt"
	"strings"
	"time"

	"github.com/fleetlimit/fleetlimit/sim"
	"github.com/fleetlimit/fleetlimit/window"
)

// PartLimits runs every sliding design on a key with two limits, L per
// minute and a burst limit of BurstLimit per second, under the study's
// floods and an honest client (K = 8, Δ = 1 s): each design's figures
// against each limit.
const PartLimits = "limits"

// Parts are the study's parts, in the report's order.
var Parts = []string{PartHonest, PartFlood, PartBusy, PartFixed, PartBeyond, PartCounters, PartLimits, PartPeers, PartFleet}

// partsWanted says which parts there are, for an error message.
func partsWanted() string {
	return strings.Join(Parts[:len(Parts)-1], ", ") + " or " + Parts[len(Parts)-1]
}

// The limits part's axes: the burst limit beside L = 100 a minute (5 a
// second, three times the minute's average rate), and its traffics.
var (
	BurstLimit  = sim.Limit{Requests: 5, Window: time.Second}
	LimitFloods = []float64{1.5, 10, 100, 1000}
	LimitHonest = []string{"steady:0.8", "pageload:0.8"}
)

const (
	limitFloodSeeds  = 3
	limitHonestSeeds = 3
	limitHonestT     = 120 * time.Minute
)

// limitRuns returns design name's runs of the limits part.
func limitRuns(name string) []Run {
	var runs []Run
	add := func(tr sim.Traffic, routing sim.Routing, length time.Duration, seeds int) {
		for s := uint64(1); s <= uint64(seeds); s++ {
			p := base(name, refK, refSync, s)
			p.Traffic, p.Routing, p.Duration, p.Limits = tr, routing, length, []sim.Limit{BurstLimit}
			runs = append(runs, Run{PartLimits, p})
		}
	}
	for _, m := range LimitFloods {
		add(sim.Traffic{Kind: sim.Flood, Factor: m}, sim.Even, FloodDuration(m), limitFloodSeeds)
	}
	for _, tr := range LimitHonest {
		add(traffic(tr), sim.Uneven, limitHonestT, limitHonestSeeds)
	}
	return runs
}

// limitCell is a scenario of the limits part.
func limitCell(d, tr string, routing sim.Routing) Cell {
	return Cell{PartLimits, d, refK, refSync, quietLimit, refWindow, window.Sliding, 0, tr, routing, ""}
}

// limits writes the limits part: each design's admitted_x and worst window
// against the minute and against the burst limit under each flood, and
// the honest client's rejections.
func (s section) limits() {
	if !s.has(PartLimits) {
		return
	}
	burst := BurstLimit.String()
	fmt.Fprintf(s.b, "\n## Several limits on one key\n\n")
	fmt.Fprintf(s.b, "Every sliding design on a key with two limits, L = %d per %v and a burst limit of %s, run together "+
		"(design.Multi): a request is admitted only if both admit it, and counted against them only then (K = %d, Δ = %v; "+
		"%d seeds for floods, %d for honest traffic). Each cell is `admitted_x` / `worst_window_x` against the minute, "+
		"then against the burst limit (multiples of its own limit).\n\n",
		quietLimit, refWindow, burst, refK, refSync, limitFloodSeeds, limitHonestSeeds)
	var head []string
	for _, m := range LimitFloods {
		head = append(head, floodSpec(m))
	}
	var tbl [][]string
	for _, d := range s.designs {
		row := []string{d}
		for _, m := range LimitFloods {
			row = append(row, s.t.fmt(limitCell(d, floodSpec(m), sim.Even), func(m Mean) string {
				return fmt.Sprintf("%.3f / %.3f; %.3f / %.3f", m.AdmittedX, m.WorstWindowX, m.AlsoAdmittedX, m.AlsoWorstWindowX)
			}))
		}
		tbl = append(tbl, row)
	}
	writeTable(s.b, append([]string{"design"}, head...), tbl)
	fmt.Fprintf(s.b, "\n### Honest clients, uneven routing: rejected_pct (with the burst limit)\n\n")
	tbl = nil
	for _, d := range s.designs {
		row := []string{d}
		for _, tr := range LimitHonest {
			row = append(row, s.t.fmt(limitCell(d, tr, sim.Uneven), func(m Mean) string { return fmt.Sprintf("%.3f", m.RejectedPct) }))
		}
		tbl = append(tbl, row)
	}
	writeTable(s.b, append([]string{"design"}, LimitHonest...), tbl)
	s.b.WriteString("\n" + s.limitsFinding() + "\n\n")
}

// limitsFinding says what the tables show: the worst window against each
// limit, the designs that hold the burst limit under every flood, and what
// they cost an honest client.
func (s section) limitsFinding() string {
	type worst struct {
		d, tr string
		x     float64
	}
	var minute, second worst
	var holders []string
	for _, d := range s.designs {
		holds, seen := true, false
		for _, m := range LimitFloods {
			c, ok := s.t[limitCell(d, floodSpec(m), sim.Even)]
			if !ok {
				continue
			}
			seen = true
			holds = holds && c.AlsoWorstWindowX <= 1
			if c.WorstWindowX > minute.x {
				minute = worst{d, floodSpec(m), c.WorstWindowX}
			}
			if c.AlsoWorstWindowX > second.x {
				second = worst{d, floodSpec(m), c.AlsoWorstWindowX}
			}
		}
		if seen && holds {
			h := d
			if c, ok := s.t[limitCell(d, LimitHonest[0], sim.Uneven)]; ok {
				h += fmt.Sprintf(" (%.3f%% of %s rejected)", c.RejectedPct, LimitHonest[0])
			}
			holders = append(holders, h)
		}
	}
	if minute.d == "" {
		return ""
	}
	out := fmt.Sprintf("What the tables show: a request is counted against both limits only when both admit it, so each "+
		"limit is held as its design holds it alone. The worst window against the minute is %.3f L (%s under %s); against "+
		"the burst limit %.3f times its %d (%s under %s). ", minute.x, minute.d, minute.tr, second.x, BurstLimit.Requests, second.d, second.tr)
	if BurstLimit.Window <= refSync {
		out += fmt.Sprintf("The burst limit's window (%v) is no longer than Δ (%v): a gateway that decides from its view of the "+
			"store hears of none of the others' admits within it, and every gateway may spend all of it at once. ", BurstLimit.Window, refSync)
	}
	if len(holders) == 0 {
		return out + "No design holds the burst limit under every flood."
	}
	return out + "The designs that hold it under every flood: " + strings.Join(holders, ", ") + "."
}
