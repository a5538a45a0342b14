package study

import (
	"fmt"
	"strings"
	"time"

	"github.com/fleetlimit/fleetlimit/sim"
	"github.com/fleetlimit/fleetlimit/window"
)

// PartCounters runs every sliding design with its window counted in
// buckets beside the exact log, on the same seeds (K = 8, Δ = 1 s): what
// counters cost in honest rejections and in floods.
const PartCounters = "counters"

// The counters part's axes: the exact log (0) and a minute in 120, 60 and 6
// buckets; honest traffic, floods and the busy key.
var (
	CounterBuckets     = []int{0, 120, 60, 6}
	CounterHonest      = []string{"steady:0.8", "pageload:0.8"}
	CounterFloods      = []float64{10, 100}
	CounterBusyBuckets = []int{0, 60}
)

// counterRise is the rise of a flood's worst window over the exact log's
// that the report names.
const counterRise = 0.05

const (
	counterSeeds      = 5
	counterFloodSeeds = 3
	counterBusySeeds  = 2
	counterHonestT    = 120 * time.Minute
	counterBusyT      = 60 * time.Minute
)

// counterRuns returns design name's runs of the counters part.
func counterRuns(name string) []Run {
	var runs []Run
	add := func(buckets, limit int, tr sim.Traffic, routing sim.Routing, length time.Duration, seeds int) {
		for s := uint64(1); s <= uint64(seeds); s++ {
			p := base(name, refK, refSync, s)
			p.Limit, p.Traffic, p.Routing, p.Duration, p.WindowBuckets = limit, tr, routing, length, buckets
			runs = append(runs, Run{PartCounters, p})
		}
	}
	for _, b := range CounterBuckets {
		for _, tr := range CounterHonest {
			add(b, quietLimit, traffic(tr), sim.Uneven, counterHonestT, counterSeeds)
		}
		for _, m := range CounterFloods {
			add(b, quietLimit, sim.Traffic{Kind: sim.Flood, Factor: m}, sim.Even, FloodDuration(m), counterFloodSeeds)
		}
	}
	for _, b := range CounterBusyBuckets {
		add(b, BusyLimit, traffic(refHonest), sim.Uneven, counterBusyT, counterBusySeeds)
	}
	return runs
}

// counterCell is a scenario of the counters part.
func counterCell(d string, buckets, limit int, tr string, routing sim.Routing) Cell {
	return Cell{PartCounters, d, refK, refSync, limit, refWindow, window.Sliding, buckets, tr, routing, ""}
}

// bucketsName names a column: the exact log or B counters.
func bucketsName(b int) string {
	if b == 0 {
		return "exact log"
	}
	return fmt.Sprintf("%d counters of %v", b, refWindow/time.Duration(b))
}

// counters writes the counters part: honest rejections, floods and the busy
// key for each window kind, and what they show.
func (s section) counters() {
	if !s.has(PartCounters) {
		return
	}
	fmt.Fprintf(s.b, "\n## Counter windows against the exact log\n\n")
	fmt.Fprintf(s.b, "Every sliding design with its window (W = %v) counted in B buckets, each admit counted until its whole bucket "+
		"has left the window, beside the exact log on the same seeds (K = %d, Δ = %v, L = %d; %d seeds for honest traffic, "+
		"%d for floods, %d for the busy key). Counters hold a key in memory independent of L and of the requests' costs; "+
		"the price is that an admit counts up to one bucket longer.\n\n",
		refWindow, refK, refSync, quietLimit, counterSeeds, counterFloodSeeds, counterBusySeeds)
	var head []string
	for _, b := range CounterBuckets {
		head = append(head, bucketsName(b))
	}
	pct := func(m Mean) string { return fmt.Sprintf("%.3f", m.RejectedPct) }
	for _, tr := range CounterHonest {
		fmt.Fprintf(s.b, "### Honest %s, uneven routing: rejected_pct\n\n", tr)
		s.counterTable(head, CounterBuckets, func(d string, b int) Cell { return counterCell(d, b, quietLimit, tr, sim.Uneven) }, pct)
	}
	for _, m := range CounterFloods {
		fmt.Fprintf(s.b, "### %s: worst_window_x [admitted_x]\n\n", floodSpec(m))
		s.counterTable(head, CounterBuckets, func(d string, b int) Cell { return counterCell(d, b, quietLimit, floodSpec(m), sim.Even) },
			func(m Mean) string { return fmt.Sprintf("%.3f [%.3f]", m.WorstWindowX, m.AdmittedX) })
	}
	var busyHead []string
	for _, b := range CounterBusyBuckets {
		busyHead = append(busyHead, bucketsName(b))
	}
	fmt.Fprintf(s.b, "### Busy key (L = %d), honest %s, uneven: rejected_pct\n\n", BusyLimit, refHonest)
	s.counterTable(busyHead, CounterBusyBuckets, func(d string, b int) Cell { return counterCell(d, b, BusyLimit, refHonest, sim.Uneven) }, pct)
	s.b.WriteString(s.countersFinding())
}

func (s section) counterTable(head []string, buckets []int, cell func(d string, b int) Cell, f func(Mean) string) {
	var tbl [][]string
	for _, d := range s.designs {
		row := []string{d}
		for _, b := range buckets {
			row = append(row, s.t.fmt(cell(d, b), f))
		}
		tbl = append(tbl, row)
	}
	writeTable(s.b, append([]string{"design"}, head...), tbl)
	s.b.WriteString("\n")
}

// countersFinding says in words what the tables show: the most honest
// rejections counters add, and how the floods' worst windows compare.
func (s section) countersFinding() string {
	type worst struct {
		d    string
		diff float64
		ok   bool
	}
	honest := func(b int) worst {
		var w worst
		for _, d := range s.designs {
			for _, tr := range CounterHonest {
				e, ok1 := s.t[counterCell(d, 0, quietLimit, tr, sim.Uneven)]
				c, ok2 := s.t[counterCell(d, b, quietLimit, tr, sim.Uneven)]
				if ok1 && ok2 && (!w.ok || c.RejectedPct-e.RejectedPct > w.diff) {
					w = worst{d + " under " + tr, c.RejectedPct - e.RejectedPct, true}
				}
			}
		}
		return w
	}
	var rises []string
	cells := 0
	for _, d := range s.designs {
		for _, m := range CounterFloods {
			e, ok1 := s.t[counterCell(d, 0, quietLimit, floodSpec(m), sim.Even)]
			for _, b := range CounterBuckets[1:] {
				c, ok2 := s.t[counterCell(d, b, quietLimit, floodSpec(m), sim.Even)]
				if !ok1 || !ok2 {
					continue
				}
				cells++
				if c.WorstWindowX-e.WorstWindowX > counterRise {
					rises = append(rises, fmt.Sprintf("%s with %d counters under %s (%.3f → %.3f)", d, b, floodSpec(m), e.WorstWindowX, c.WorstWindowX))
				}
			}
		}
	}
	out := "What the tables show: "
	for _, b := range CounterBuckets[1:] {
		if w := honest(b); w.ok {
			out += fmt.Sprintf("with %s, honest rejections rise by at most %.3f points (%s); ", bucketsName(b), w.diff, w.d)
		}
	}
	if cells > 0 {
		out += fmt.Sprintf("of the %d flood cells, %d have a worst window more than %.2f L above the exact log's", cells, len(rises), counterRise)
		if len(rises) > 0 {
			out += ": " + strings.Join(rises, "; ") + ". Counters never count an admit less, so each decision they take " +
				"the exact log would take on the same history; but a bucket leaves the window whole, at one instant for every " +
				"gateway, and a design that sizes local admits from the room its view shows (headroom, track-share) sees room " +
				"come in steps of a bucket instead of one admit at a time"
		}
		out += ". "
	}
	return out + "\n\n"
}
