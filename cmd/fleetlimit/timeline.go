package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/fleetlimit/fleetlimit/sim"
	"github.com/fleetlimit/fleetlimit/study"
)

// maxGatewayColumns is the most gateways a text timeline shows one column
// each; a larger fleet shows the least, median and most a gateway admitted.
const maxGatewayColumns = 16

// simTimeline runs one seed of d and prints its timeline, or draws it
// into a file, as spec (a bucket width or FILE.svg, FILE.png) asks, up to
// until (0: three windows).
func simTimeline(w io.Writer, d sim.Params, seeds int, spec string, until time.Duration, asJSON bool) error {
	file, format, bucket, err := parseTimeline(spec)
	switch {
	case err != nil:
		return err
	case seeds != 1:
		return usagef("--timeline shows one run: give --seed S, not --seeds %d", seeds)
	case file != "" && asJSON:
		return usagef("--timeline %s draws the run; --json prints it: give one", file)
	case until < 0:
		return usagef("--timeline-until %v: want a positive duration", until)
	case until == 0:
		until = 3 * d.Window
	}
	until = min(until, d.Duration)
	if file != "" {
		bucket = study.PictureBucket(d, until)
	}
	r, tl, err := sim.RunTimeline(d, bucket, until)
	if err != nil {
		return usageError{err}
	}
	switch {
	case file != "":
		return drawTimeline(w, file, format, d, until, r, tl)
	case asJSON:
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

// parseTimeline reads --timeline: a picture file and its format, or a
// bucket width.
func parseTimeline(spec string) (file, format string, bucket time.Duration, err error) {
	ext := strings.ToLower(strings.TrimPrefix(filepath.Ext(spec), "."))
	if slices.Contains(study.TimelineFormats, ext) {
		return spec, ext, 0, nil
	}
	bucket, perr := time.ParseDuration(spec)
	switch {
	case spec == "":
		return "", "", 0, usagef("--timeline: give a bucket width such as 1s, or a file to draw the run into, such as run.svg")
	case perr != nil:
		return "", "", 0, usagef("--timeline %q: want a bucket width such as 1s, or a file ending in .svg or .png to draw the run into", spec)
	case bucket <= 0:
		return "", "", 0, usagef("--timeline %v: want a positive bucket width, such as 1s", bucket)
	}
	return "", "", bucket, nil
}

// drawTimeline draws the run into file and says so.
func drawTimeline(w io.Writer, file, format string, d sim.Params, until time.Duration, r sim.Result, tl sim.Timeline) error {
	f, err := os.Create(file)
	if err != nil {
		return runError{err}
	}
	if err := study.DrawTimeline(f, format, d, r, tl); err != nil {
		f.Close()
		return runError{err}
	}
	if err := f.Close(); err != nil {
		return runError{err}
	}
	fmt.Fprintf(w, "fleetlimit sim %s\n", d.String())
	fmt.Fprintf(w, "drew %v of the run in buckets of %v into %s\n", until, tl.Bucket.Round(time.Microsecond), file)
	fmt.Fprintf(w, "the whole run: admitted_x %.3f, worst_window_x %.3f, rejected %.2f%%, round trips %.2f%%\n",
		r.AdmittedX, r.WorstWindowX, r.RejectedPct, r.RoundTripPct)
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
