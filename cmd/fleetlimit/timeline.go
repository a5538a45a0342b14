package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/fleetlimit/fleetlimit/sim"
)

// maxGatewayColumns is the most gateways a text timeline shows one column
// each; a larger fleet shows the least, median and most a gateway admitted.
const maxGatewayColumns = 16

// simTimeline runs one seed of d and prints its timeline in buckets of
// width bucket up to until (0: three windows).
func simTimeline(w io.Writer, d sim.Params, seeds int, bucket, until time.Duration, asJSON bool) error {
	switch {
	case seeds != 1:
		return usagef("--timeline shows one run: give --seed S, not --seeds %d", seeds)
	case bucket <= 0:
		return usagef("--timeline %v: want a positive bucket width, such as 1s", bucket)
	case until < 0:
		return usagef("--timeline-until %v: want a positive duration", until)
	case until == 0:
		until = 3 * d.Window
	}
	until = min(until, d.Duration)
	r, tl, err := sim.RunTimeline(d, bucket, until)
	if err != nil {
		return usageError{err}
	}
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Params   string       `json:"params"`
			Result   simRun       `json:"result"`
			Timeline sim.Timeline `json:"timeline"`
		}{d.String(), toSimRun(r), tl})
	}
	writeTimeline(w, d, r, tl)
	return nil
}

// writeTimeline prints a timeline as a table, one bucket a line, with a bar
// of the fleet's admits in the window against L.
func writeTimeline(w io.Writer, d sim.Params, r sim.Result, tl sim.Timeline) {
	fmt.Fprintf(w, "fleetlimit sim %s\n", d.String())
	fmt.Fprintf(w, "timeline: admits of each gateway every %v; rejected; the fleet's admits in the %v window ending there, over L = %d (| marks L)\n\n",
		tl.Bucket, d.Window, d.Limit)
	perGateway := d.Gateways <= maxGatewayColumns
	fmt.Fprintf(w, "%9s ", "t")
	if perGateway {
		for g := range d.Gateways {
			fmt.Fprintf(w, "%5s", fmt.Sprintf("g%d", g))
		}
	} else {
		fmt.Fprintf(w, "%17s", "gateway min/med/max")
	}
	fmt.Fprintf(w, " %7s %8s  %s\n", "fleet", "rejected", "in window / L")
	for b, admits := range tl.Admits {
		fmt.Fprintf(w, "%9v ", time.Duration(b)*tl.Bucket)
		total := 0
		for _, n := range admits {
			total += n
		}
		if perGateway {
			for _, n := range admits {
				fmt.Fprintf(w, "%5d", n)
			}
		} else {
			s := slices.Sorted(slices.Values(admits))
			fmt.Fprintf(w, "%17s", fmt.Sprintf("%d/%d/%d", s[0], s[len(s)/2], s[len(s)-1]))
		}
		x := float64(tl.InWindow[b]) / float64(d.Limit)
		fmt.Fprintf(w, " %7d %8d  %5.2f %s\n", total, tl.Rejects[b], x, bar(x))
	}
	fmt.Fprintf(w, "\nthe whole run: admitted_x %.3f, worst_window_x %.3f, rejected %.2f%%, round trips %.2f%%\n",
		r.AdmittedX, r.WorstWindowX, r.RejectedPct, r.RoundTripPct)
}

// bar draws x (a multiple of L) at ten characters to L, with | at L, and
// > when it is cut at 4 L.
func bar(x float64) string {
	n := int(x*10 + 0.5)
	cut := n > 40
	n = min(n, 40)
	s := strings.Repeat("#", min(n, 10)) + strings.Repeat(" ", 10-min(n, 10)) + "|" + strings.Repeat("#", max(n-10, 0))
	if cut {
		s += ">"
	}
	return s
}
