// Package explore serves fleetlimit's explorer: a page, embedded in the
// binary and working offline, where a reader picks designs, K, Δ, L, the
// traffic and the store's faults and sees each design's timeline and
// figures side by side, recomputed by the simulator in this process as a
// value changes.
//
// It runs simulations a page asks for, bounded in size, and never reaches
// beyond the address it listens on.
package explore

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fleetlimit/fleetlimit/sim"
	"github.com/fleetlimit/fleetlimit/sim/catalog"
	"github.com/fleetlimit/fleetlimit/study"
)

//go:embed static
var static embed.FS

// Bounds of one request, so that a page stays interactive and a bad value
// cannot hold the process.
const (
	MaxDuration = 2 * time.Hour
	MaxRequests = 5e7 // simulated requests over every design of a request
	MaxDesigns  = 10
	Buckets     = 240 // points of a timeline
)

// Handler serves the page at /, the simulations at /api/run and one
// design's picture at /api/timeline.svg.
func Handler() http.Handler {
	mux := http.NewServeMux()
	sub, _ := fs.Sub(static, "static")
	mux.Handle("GET /", http.FileServerFS(sub))
	mux.HandleFunc("GET /api/designs", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"designs": catalog.Sliding()})
	})
	mux.HandleFunc("GET /api/run", func(w http.ResponseWriter, r *http.Request) {
		resp, err := Run(r.URL.Query())
		if err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, resp)
	})
	mux.HandleFunc("GET /api/timeline.svg", func(w http.ResponseWriter, r *http.Request) {
		var buf bytes.Buffer
		if err := Picture(&buf, r.URL.Query()); err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
			return
		}
		w.Header().Set("Content-Type", "image/svg+xml")
		w.Write(buf.Bytes())
	})
	return mux
}

// Picture draws, as SVG into w, the run of the one design q names (as
// Run reads q): what fleetlimit sim --timeline FILE.svg draws.
func Picture(w io.Writer, q map[string][]string) error {
	p, designs, err := params(q)
	if err != nil {
		return err
	}
	if len(designs) != 1 {
		return fmt.Errorf("designs: a picture is of one design, not %d", len(designs))
	}
	p.Design = designs[0]
	bucket := study.PictureBucket(p, p.Duration)
	r, tl, err := sim.RunTimeline(p, bucket, p.Duration)
	if err != nil {
		return err
	}
	return study.DrawTimeline(w, "svg", p, r, tl)
}

// Response is what /api/run answers: the parameters as sim's flags (but
// the design) and one run per design.
type Response struct {
	Params string    `json:"params"`
	Limit  int       `json:"limit"`
	Runs   []RunView `json:"runs"`
}

// RunView is one design's run: the figures sim --json prints, and the
// fleet's admits in the window over time, × L.
type RunView struct {
	Design       string    `json:"design"`
	AdmittedX    float64   `json:"admitted_x"`
	WorstWindowX float64   `json:"worst_window_x"`
	RejectedPct  float64   `json:"rejected_pct"`
	RoundTripPct float64   `json:"round_trip_pct"`
	BucketSec    float64   `json:"bucket_seconds"`
	InWindowX    []float64 `json:"in_window_x"`
}

// Run runs what a page asks for: q holds designs (comma-separated),
// gateways, sync, limit, window, traffic, routing, duration, seed, rtt and
// loss, each defaulting to sim's.
func Run(q map[string][]string) (Response, error) {
	p, designs, err := params(q)
	if err != nil {
		return Response{}, err
	}
	// the flags of sim for every design picked, less the design
	resp := Response{Params: strings.Replace(p.String(), "--design "+p.Design+" ", "", 1), Limit: p.Limit}
	bucket := max(p.Duration/Buckets, time.Millisecond)
	for _, d := range designs {
		p.Design = d
		r, tl, err := sim.RunTimeline(p, bucket, p.Duration)
		if err != nil {
			return Response{}, fmt.Errorf("%s: %w", d, err)
		}
		v := RunView{Design: d, AdmittedX: r.AdmittedX, WorstWindowX: r.WorstWindowX, RejectedPct: r.RejectedPct,
			RoundTripPct: r.RoundTripPct, BucketSec: bucket.Seconds()}
		for _, n := range tl.InWindow {
			v.InWindowX = append(v.InWindowX, float64(n)/float64(p.Limit))
		}
		resp.Runs = append(resp.Runs, v)
	}
	return resp, nil
}

// params reads a request's parameters over sim's defaults, and checks
// them as sim does, and against the explorer's bounds.
func params(q map[string][]string) (sim.Params, []string, error) {
	get := func(k string) (string, bool) {
		v, ok := q[k]
		if !ok || len(v) == 0 || strings.TrimSpace(v[0]) == "" {
			return "", false
		}
		return strings.TrimSpace(v[0]), true
	}
	p := sim.Defaults()
	p.Duration = 10 * time.Minute
	designs := []string{"shared-counter", "headroom"}
	if v, ok := get("designs"); ok {
		designs = strings.Split(v, ",")
	}
	if len(designs) > MaxDesigns {
		return p, nil, fmt.Errorf("designs: at most %d at once", MaxDesigns)
	}
	for _, d := range designs {
		if !slices.Contains(catalog.Sliding(), d) {
			return p, nil, fmt.Errorf("design %q: want one of %s", d, strings.Join(catalog.Sliding(), ", "))
		}
	}
	ints := []struct {
		key string
		to  *int
	}{{"gateways", &p.Gateways}, {"limit", &p.Limit}}
	for _, f := range ints {
		if v, ok := get(f.key); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				return p, nil, fmt.Errorf("%s %q: want a whole number", f.key, v)
			}
			*f.to = n
		}
	}
	durations := []struct {
		key string
		to  *time.Duration
	}{{"sync", &p.Sync}, {"window", &p.Window}, {"duration", &p.Duration}, {"rtt", &p.Faults.RTT}}
	for _, f := range durations {
		if v, ok := get(f.key); ok {
			d, err := time.ParseDuration(v)
			if err != nil {
				return p, nil, fmt.Errorf("%s %q: want a duration such as 1s or 300ms", f.key, v)
			}
			*f.to = d
		}
	}
	if v, ok := get("seed"); ok {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return p, nil, fmt.Errorf("seed %q: want a whole number", v)
		}
		p.Seed = n
	}
	if v, ok := get("loss"); ok {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return p, nil, fmt.Errorf("loss %q: want a probability from 0 to 1", v)
		}
		p.Faults.Loss = f
	}
	if err := traffic(&p, get); err != nil {
		return p, nil, err
	}
	if err := p.Validate(); err != nil {
		return p, nil, err
	}
	if p.Duration > MaxDuration {
		return p, nil, fmt.Errorf("duration %v: the explorer runs at most %v", p.Duration, MaxDuration)
	}
	if n := expected(p) * float64(len(designs)); n > MaxRequests {
		return p, nil, fmt.Errorf("%.3g simulated requests: the explorer runs at most %.0g at once; shorten the run, lower the traffic or pick fewer designs", n, float64(MaxRequests))
	}
	return p, designs, nil
}

// traffic reads the traffic and routing.
func traffic(p *sim.Params, get func(string) (string, bool)) error {
	if v, ok := get("traffic"); ok {
		mix, err := sim.ParseMix(v)
		if err != nil {
			return err
		}
		p.Traffic, p.Also = mix[0], mix[1:]
	}
	if v, ok := get("routing"); ok {
		r, err := sim.ParseRouting(v)
		if err != nil {
			return err
		}
		p.Routing = r
	}
	return nil
}

// expected is about how many requests a run of p simulates.
func expected(p sim.Params) float64 {
	rate := p.Traffic.Factor
	for _, t := range p.Also {
		rate += t.Factor
	}
	return rate * float64(p.Limit) * float64(p.Duration) / float64(p.Window)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}
