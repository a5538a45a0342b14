package study

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"gonum.org/v1/plot/plotter"

	"github.com/fleetlimit/fleetlimit/sim"
	"github.com/fleetlimit/fleetlimit/sim/catalog"
	"github.com/fleetlimit/fleetlimit/window"
)

// Write writes results.csv, summary.json, the plots and report.md into dir.
func Write(dir string, rows []Row) error {
	var buf bytes.Buffer
	if err := WriteCSV(&buf, rows); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "results.csv"), buf.Bytes(), 0o644); err != nil {
		return err
	}
	return writeReport(dir, rows)
}

// Rebuild rereads dir/results.csv and writes summary.json, the plots and
// report.md again. It returns the number of runs read.
func Rebuild(dir string) (int, error) {
	name := filepath.Join(dir, "results.csv")
	f, err := os.Open(name)
	if err != nil {
		return 0, fmt.Errorf("%w (run fleetlimit study --out %s first)", err, dir)
	}
	defer f.Close()
	rows, err := ReadCSV(f, name)
	if err != nil {
		return 0, err
	}
	return len(rows), writeReport(dir, rows)
}

// Report is the built report: its Markdown, summary and charts.
type Report struct {
	Markdown string
	Summary  Summary
	charts   []chart
}

// Summary is summary.json.
type Summary struct {
	Runs      int            `json:"runs"`
	Requests  int64          `json:"simulated_requests"`
	Parts     map[string]int `json:"runs_per_part"`
	FloodLaw  *Fit           `json:"flood_law_shared_counter,omitempty"`
	Scenarios []scenario     `json:"scenarios"`
}

type scenario struct {
	Part         string  `json:"part"`
	Design       string  `json:"design"`
	Gateways     int     `json:"gateways"`
	Sync         string  `json:"sync"`
	Limit        int     `json:"limit"`
	WindowKind   string  `json:"window_kind"`
	Traffic      string  `json:"traffic"`
	Routing      string  `json:"routing"`
	Seeds        int     `json:"seeds"`
	AdmittedX    float64 `json:"admitted_x"`
	WorstWindowX float64 `json:"worst_window_x"`
	WorstFixedX  float64 `json:"worst_fixed_window_x"`
	RejectedPct  float64 `json:"rejected_pct"`
	RoundTripPct float64 `json:"round_trip_pct"`
	StrandedX    float64 `json:"stranded_x"`
	Faults       string  `json:"faults,omitempty"`
	AttackX      float64 `json:"attack_window_x,omitempty"`
	FirstBefore  float64 `json:"first_rejected_before_pct,omitempty"`
	FirstAfter   float64 `json:"first_rejected_after_pct,omitempty"`
}

func writeReport(dir string, rows []Row) error {
	rep := Build(rows)
	for _, c := range rep.charts {
		if err := c.draw(dir); err != nil {
			return fmt.Errorf("plot %s: %w", c.file, err)
		}
	}
	js, err := json.MarshalIndent(rep.Summary, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "summary.json"), append(js, '\n'), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "report.md"), []byte(rep.Markdown), 0o644)
}

// reference values the report's tables are taken at.
const (
	refK       = 8
	refSync    = time.Second
	refHonest  = "steady:0.8"
	refPage    = "pageload:0.8"
	quietLimit = 100
	refWindow  = time.Minute
)

// Build builds the report from rows. It is pure: the same rows give the
// same report, byte for byte.
func Build(rows []Row) Report {
	t := aggregate(rows)
	var b strings.Builder
	rep := Report{Summary: summarize(rows, t)}
	fmt.Fprintf(&b, "# fleetlimit study report\n\n")
	fmt.Fprintf(&b, "%d runs, %d simulated requests (%s). Every figure below is a mean over the seeds of one scenario in `results.csv`; "+
		"`admitted_x` and `worst_window_x` are multiples of L, percentages are of requests. A `–` marks a scenario that was not run.\n\n",
		len(rows), rep.Summary.Requests, partsLine(rep.Summary.Parts))
	s := section{t: t, b: &b, rep: &rep, rows: rows, designs: presentDesigns(rows), rates: presentFloods(rows), reduced: reduced(t)}
	s.conclusions()
	s.floods()
	s.honest()
	s.leases()
	s.fixed()
	s.beyond()
	s.headroom()
	s.counters()
	s.limits()
	s.peers()
	s.fleet()
	rep.Markdown = b.String()
	if s.reduced {
		rep.Markdown = noteReduced(rep.Markdown)
	}
	return rep
}

// reducedNote follows every table of a reduced grid's report.
const reducedNote = "_Reduced grid (`--quick` or `--filter`): fewer seeds, K or Δ than the study's; a first look, not the study's figures._"

// noteReduced puts reducedNote under every table of md.
func noteReduced(md string) string {
	lines := strings.Split(md, "\n")
	var out []string
	for i, l := range lines {
		out = append(out, l)
		if strings.HasPrefix(l, "|") && (i+1 == len(lines) || !strings.HasPrefix(lines[i+1], "|")) {
			out = append(out, "", reducedNote)
		}
	}
	return strings.Join(out, "\n")
}

// summarize builds summary.json's figures: totals and every cell's means.
func summarize(rows []Row, t table) Summary {
	sum := Summary{Runs: len(rows), Parts: map[string]int{}}
	for _, r := range rows {
		sum.Requests += r.Requests
		sum.Parts[r.Part]++
	}
	for _, c := range t.sortedCells() {
		m := t[c]
		sum.Scenarios = append(sum.Scenarios, scenario{c.Part, c.Design, c.Gateways, c.Sync.String(), c.Limit,
			c.Kind.String(), c.Traffic, c.Routing.String(), m.Seeds, m.AdmittedX, m.WorstWindowX, m.WorstFixedWindowX,
			m.RejectedPct, m.RoundTripPct, m.StrandedX, c.Faults, m.AttackWindowX, m.FirstBeforePct, m.FirstAfterPct})
	}
	if fit, _, _ := floodLaw(t); fit != nil {
		sum.FloodLaw = fit
	}
	return sum
}

// section is what the report's sections are written from and into.
type section struct {
	t       table
	b       *strings.Builder
	rep     *Report
	rows    []Row
	designs []string
	rates   []float64 // flood rates present
	reduced bool      // the grid is thinner than the study's: no verdicts
}

// byDesign writes a table with one row per design and one column per x of
// xs (headed head[i]), each cell of cell(d, i) shown by text, and returns a
// series per design of y against xs for a chart.
func (s section) byDesign(head []string, xs []float64, cell func(d string, i int) Cell, text func(Mean) string, y func(Mean) float64) []series {
	var tbl [][]string
	var out []series
	for ci, d := range s.designs {
		row := []string{d}
		var pts plotter.XYs
		for i := range xs {
			c := cell(d, i)
			row = append(row, s.t.fmt(c, text))
			if v, ok := s.t[c]; ok {
				pts = append(pts, plotter.XY{X: xs[i], Y: y(v)})
			}
		}
		if len(pts) == 0 { // a design this part did not run
			continue
		}
		tbl = append(tbl, row)
		out = append(out, series{name: d, pts: pts, color: ci})
	}
	writeTable(s.b, append([]string{"design"}, head...), tbl)
	return out
}

func admitted(m Mean) string { return fmt.Sprintf("%.3f", m.AdmittedX) }
func cost(m Mean) string     { return fmt.Sprintf("%.3f [%.2f]", m.RejectedPct, m.WorstWindowX) }

// floods writes the flood tables at K = 8, Δ = 1 s, the law and the ceilings.
func (s section) floods() {
	fmt.Fprintf(s.b, "## Floods\n\n### admitted_x by design and flood rate (K = %d, Δ = %v, even routing)\n\n", refK, refSync)
	var head []string
	for _, m := range s.rates {
		head = append(head, "flood:"+ff(m))
	}
	k8 := s.byDesign(head, s.rates, func(d string, i int) Cell {
		return Cell{PartFlood, d, refK, refSync, quietLimit, refWindow, window.Sliding, 0, floodSpec(s.rates[i]), sim.Even, ""}
	}, admitted, func(m Mean) float64 { return m.AdmittedX })
	s.rep.addChart(s.b, "admitted under floods", chart{file: "floods_k8.png", title: fmt.Sprintf("Floods spread evenly, K = %d, Δ = %v, L = %d per %v", refK, refSync, quietLimit, refWindow),
		xlabel: "flood rate M (x L per window)", ylabel: "admitted_x (x L)", logX: true, logY: true, series: k8, xticks: s.rates, multiples: true})
	if fit, lawChart, lawText := floodLaw(s.t); fit != nil {
		s.b.WriteString(lawText)
		s.rep.addChart(s.b, "the flood law", lawChart)
	}
	s.b.WriteString(plateaus(s.t, s.designs))
}

// honestCell is the quiet key's honest scenario of design d.
func honestCell(d string, k int, sync time.Duration, tr string) Cell {
	return Cell{PartHonest, d, k, sync, quietLimit, refWindow, window.Sliding, 0, tr, sim.Uneven, ""}
}

// honest writes the honest cost by K and by Δ, and page loads by K.
func (s section) honest() {
	ks := presentInts(s.rows, func(r Row) (int, bool) { return r.Params.Gateways, r.Part == PartHonest })
	var kHead []string
	for _, k := range ks {
		kHead = append(kHead, fmt.Sprintf("K=%d", k))
	}
	rejected := func(m Mean) float64 { return m.RejectedPct }
	fmt.Fprintf(s.b, "## Honest cost\n\n### rejected_pct [worst_window_x] by design and K (%s, uneven routing, Δ = %v)\n\n", refHonest, refSync)
	byK := s.byDesign(kHead, floats(ks), func(d string, i int) Cell { return honestCell(d, ks[i], refSync, refHonest) }, cost, rejected)
	s.rep.addChart(s.b, "honest rejections by K", chart{file: "honest_k.png", title: fmt.Sprintf("Honest %s, uneven routing, Δ = %v, L = %d per %v", refHonest, refSync, quietLimit, refWindow),
		xlabel: "gateways K", ylabel: "rejected honest requests (%)", logX: true, series: byK, xticks: floats(ks), multiples: true})

	syncs := presentDurations(s.rows, PartHonest)
	var sHead []string
	for _, d := range syncs {
		sHead = append(sHead, "Δ="+d.String())
	}
	fmt.Fprintf(s.b, "### rejected_pct [worst_window_x] by design and Δ (%s, uneven routing, K = %d)\n\n", refHonest, refK)
	bySync := s.byDesign(sHead, seconds(syncs), func(d string, i int) Cell { return honestCell(d, refK, syncs[i], refHonest) }, cost, rejected)
	s.rep.addChart(s.b, "honest rejections by Δ", chart{file: "honest_sync.png", title: fmt.Sprintf("Honest %s, uneven routing, K = %d, L = %d per %v", refHonest, refK, quietLimit, refWindow),
		xlabel: "sync interval Δ (s)", ylabel: "rejected honest requests (%)", logX: true, series: bySync, xticks: seconds(syncs), multiples: true})

	fmt.Fprintf(s.b, "### Page loads: rejected_pct [worst_window_x] by design and K (%s, uneven routing, Δ = %v)\n\n", refPage, refSync)
	s.byDesign(kHead, floats(ks), func(d string, i int) Cell { return honestCell(d, ks[i], refSync, refPage) }, cost, rejected)
}

// leases writes the lease designs on a quiet key against a busy one.
func (s section) leases() {
	fmt.Fprintf(s.b, "\n## Leases: quiet key against busy key (%s, uneven routing, Δ = %v)\n\n", refHonest, refSync)
	fmt.Fprintf(s.b, "stranded_x is the lease slots held unused by the gateways, time-averaged, as a multiple of L.\n\n")
	busyKs := presentInts(s.rows, func(r Row) (int, bool) { return r.Params.Gateways, r.Part == PartBusy })
	head := []string{"design", "key", "K", "stranded_x", "round_trip_pct", "rejected_pct", "worst_window_x"}
	var tbl [][]string
	for _, d := range []string{"lease", "lease-ask"} {
		for _, key := range []struct {
			name  string
			part  string
			limit int
		}{{"quiet (L=100)", PartHonest, quietLimit}, {"busy (L=10000)", PartBusy, BusyLimit}} {
			for _, k := range busyKs {
				c := Cell{key.part, d, k, refSync, key.limit, refWindow, window.Sliding, 0, refHonest, sim.Uneven, ""}
				m, ok := s.t[c]
				if !ok {
					tbl = append(tbl, []string{d, key.name, fmt.Sprint(k), "–", "–", "–", "–"})
					continue
				}
				tbl = append(tbl, []string{d, key.name, fmt.Sprint(k), fmt.Sprintf("%.3f", m.StrandedX),
					fmt.Sprintf("%.2f", m.RoundTripPct), fmt.Sprintf("%.3f", m.RejectedPct), fmt.Sprintf("%.3f", m.WorstWindowX)})
			}
		}
	}
	writeTable(s.b, head, tbl)
}

// fixed writes sliding against fixed windows under floods.
func (s section) fixed() {
	fmt.Fprintf(s.b, "\n## Sliding against fixed window under floods (shared-counter, K = %d, Δ = %v)\n\n", refK, refSync)
	head := []string{"flood", "sliding admitted_x", "fixed admitted_x", "sliding worst_window_x", "fixed worst_window_x", "fixed worst fixed window"}
	var tbl [][]string
	var sl, fx plotter.XYs
	for _, m := range s.rates {
		sv, okS := s.t[Cell{PartFlood, "shared-counter", refK, refSync, quietLimit, refWindow, window.Sliding, 0, floodSpec(m), sim.Even, ""}]
		fv, okF := s.t[Cell{PartFixed, "shared-counter", refK, refSync, quietLimit, refWindow, window.Fixed, 0, floodSpec(m), sim.Even, ""}]
		row := []string{"flood:" + ff(m), "–", "–", "–", "–", "–"}
		if okS {
			row[1], row[3] = fmt.Sprintf("%.3f", sv.AdmittedX), fmt.Sprintf("%.3f", sv.WorstWindowX)
			sl = append(sl, plotter.XY{X: m, Y: sv.WorstWindowX})
		}
		if okF {
			row[2], row[4], row[5] = fmt.Sprintf("%.3f", fv.AdmittedX), fmt.Sprintf("%.3f", fv.WorstWindowX), fmt.Sprintf("%.3f", fv.WorstFixedWindowX)
			fx = append(fx, plotter.XY{X: m, Y: fv.WorstWindowX})
		}
		tbl = append(tbl, row)
	}
	writeTable(s.b, head, tbl)
	s.rep.addChart(s.b, "sliding against fixed", chart{file: "fixed_vs_sliding.png", title: fmt.Sprintf("shared-counter, floods spread evenly, K = %d, Δ = %v, L = %d per %v", refK, refSync, quietLimit, refWindow),
		xlabel: "flood rate M", ylabel: "worst_window_x: most admitted in any W (x L)", logX: true, xticks: s.rates,
		series: []series{{name: "sliding window", pts: sl, color: 0}, {name: "fixed window", pts: fx, color: 1}}})
}

// The seed's linear law holds while the flood of one sync interval is
// small: its domain in the fit.
const (
	linearMaxX    = 2.0
	linearMaxSync = time.Second
)

// lawPoint is one shared-counter flood cell against x.
type lawPoint struct {
	k    int
	x, y float64
	c    Cell
}

// fitLaw is how well law matches pts.
func fitLaw(name, desc string, pts []lawPoint, law func(x float64, k int) float64) *Fit {
	fit := &Fit{Law: name, Points: len(pts), Description: desc}
	var sq float64
	for _, p := range pts {
		e := (p.y - law(p.x, p.k)) / p.y
		sq += e * e
		if math.Abs(e) > math.Abs(fit.MaxRelErr) {
			fit.MaxRelErr = e
			fit.WorstPoint = fmt.Sprintf("K=%d Δ=%v %s: %.3f measured, %.3f by the law", p.k, p.c.Sync, p.c.Traffic, p.y, law(p.x, p.k))
		}
	}
	fit.RMSRelErr = math.Sqrt(sq / float64(len(pts)))
	return fit
}

// floodLaw checks the two laws of shared-counter under even floods, the
// seed's linear one on its domain and the saturating one everywhere,
// against every shared-counter flood cell, and draws both.
func floodLaw(t table) (*Fit, chart, string) {
	var pts, small []lawPoint
	for _, c := range t.sortedCells() {
		if c.Part == PartFlood && c.Design == "shared-counter" && c.Routing == sim.Even {
			tr, _ := sim.ParseTraffic(c.Traffic)
			p := lawPoint{c.Gateways, floodX(tr.Factor, c.Sync, c.Window), t[c].AdmittedX, c}
			pts = append(pts, p)
			if p.x <= linearMaxX && c.Sync <= linearMaxSync {
				small = append(small, p)
			}
		}
	}
	if len(pts) == 0 {
		return nil, chart{}, ""
	}
	sat := fitLaw("admitted_x = 1 + (K-1)(1 - exp(-x/(K-1)))", "the saturating law, for every x = M·Δ/W (the flood of one sync interval, in units of L)", pts, lawShared)
	var lin *Fit
	if len(small) > 0 {
		lin = fitLaw("admitted_x = 1 + (K-1)/K · x", fmt.Sprintf("the seed's linear law, x ≤ %g and Δ ≤ %v", linearMaxX, linearMaxSync), small, seedLaw)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "### admitted_x against x, the flood per sync interval (shared-counter, every K and Δ)\n\n")
	fmt.Fprintf(&b, "Symbols: K gateways share L per window W and sync every Δ; a flood of M × L per W spread over them brings "+
		"x = M·Δ/W, in units of L, in one sync interval. Until the gateways hear of each other, every request of an interval "+
		"gets through. Two laws, neither with a free parameter:\n\n")
	if lin != nil {
		fmt.Fprintf(&b, "- **The seed's linear law**, `%s`, for a small flood (x ≤ %g, Δ ≤ %v): over %d scenarios RMS relative "+
			"error %.1f%%, worst %+.1f%% (%s). It is unbounded, so it cannot hold for a large x.\n",
			lin.Law, linearMaxX, linearMaxSync, lin.Points, 100*lin.RMSRelErr, 100*lin.MaxRelErr, lin.WorstPoint)
	}
	fmt.Fprintf(&b, "- **The saturating law**, `%s`, for every x: it starts as 1 + x and never passes K × L, since each gateway "+
		"alone stops at L. Over %d scenarios RMS relative error %.1f%%, worst %+.1f%% (%s).\n\n",
		sat.Law, sat.Points, 100*sat.RMSRelErr, 100*sat.MaxRelErr, sat.WorstPoint)
	return sat, lawChart(pts), b.String()
}

// lawChart plots shared-counter's flood cells by K, each K's saturating
// law dashed and its linear law dotted over the linear law's domain.
func lawChart(pts []lawPoint) chart {
	byK := map[int]plotter.XYs{}
	for _, p := range pts {
		byK[p.k] = append(byK[p.k], plotter.XY{X: p.x, Y: p.y})
	}
	ch := chart{file: "flood_law.png", title: fmt.Sprintf("shared-counter, floods spread evenly, L = %d per %v, every K and Δ", quietLimit, refWindow),
		xlabel: "x = M·Δ/W, the flood of one sync interval (× L)", ylabel: "admitted_x (× L)", logX: true, logY: true}
	ks := slices.Sorted(maps.Keys(byK))
	for i, k := range ks {
		sort.Slice(byK[k], func(a, b int) bool { return byK[k][a].X < byK[k][b].X })
		ch.series = append(ch.series, series{name: fmt.Sprintf("K=%d", k), pts: byK[k], points: true, color: i})
		lo, hi := byK[k][0].X, byK[k][len(byK[k])-1].X
		var sat, lin plotter.XYs
		for j := 0; j <= 60; j++ {
			x := lo * math.Pow(hi/lo, float64(j)/60)
			sat = append(sat, plotter.XY{X: x, Y: lawShared(x, k)})
			if x <= linearMaxX {
				lin = append(lin, plotter.XY{X: x, Y: seedLaw(x, k)})
			}
		}
		satName, linName := "", ""
		if i == 0 { // one legend entry stands for every K's curve
			satName, linName = "saturating law, dashed", "linear law (x ≤ 2), dotted"
		}
		ch.series = append(ch.series, series{name: satName, pts: sat, line: true, color: i},
			series{name: linName, pts: lin, line: true, dotted: true, color: i})
	}
	return ch
}

// plateaus tabulates, per design and K, admitted_x at the heaviest flood and
// longest Δ present: the ceiling each design reaches.
func plateaus(t table, designs []string) string {
	var top float64
	var topSync time.Duration
	for c := range t {
		if c.Part == PartFlood {
			tr, _ := sim.ParseTraffic(c.Traffic)
			top, topSync = math.Max(top, tr.Factor), max(topSync, c.Sync)
		}
	}
	if top == 0 {
		return ""
	}
	var ks []int
	seen := map[int]bool{}
	for c := range t {
		if c.Part == PartFlood && !seen[c.Gateways] {
			seen[c.Gateways] = true
			ks = append(ks, c.Gateways)
		}
	}
	sort.Ints(ks)
	var b strings.Builder
	fmt.Fprintf(&b, "### Ceilings: admitted_x at flood:%s, Δ = %v, by design and K\n\n", ff(top), topSync)
	head := []string{"design"}
	for _, k := range ks {
		head = append(head, fmt.Sprintf("K=%d", k))
	}
	var tbl [][]string
	for _, d := range designs {
		row := []string{d}
		for _, k := range ks {
			row = append(row, t.fmt(Cell{PartFlood, d, k, topSync, quietLimit, refWindow, window.Sliding, 0, floodSpec(top), sim.Even, ""},
				func(m Mean) string { return fmt.Sprintf("%.3f", m.AdmittedX) }))
		}
		tbl = append(tbl, row)
	}
	writeTable(&b, head, tbl)
	b.WriteString("\n")
	return b.String()
}

func (t table) fmt(c Cell, f func(Mean) string) string {
	m, ok := t[c]
	if !ok {
		return "–"
	}
	return f(m)
}

func floodSpec(m float64) string { return sim.Traffic{Kind: sim.Flood, Factor: m}.String() }

// writeTable writes a Markdown table, leaving out the rows whose cells
// after the first are all "–" (scenarios this grid did not run); with none
// left, it says so instead.
func writeTable(b *strings.Builder, head []string, rows [][]string) {
	rows = slices.DeleteFunc(slices.Clone(rows), func(r []string) bool {
		return len(r) > 1 && !slices.ContainsFunc(r[1:], func(c string) bool { return c != "–" })
	})
	if len(rows) == 0 {
		b.WriteString("_Not run in this grid._\n")
		return
	}
	b.WriteString("| " + strings.Join(head, " | ") + " |\n|")
	for range head {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, r := range rows {
		b.WriteString("| " + strings.Join(r, " | ") + " |\n")
	}
}

func partsLine(parts map[string]int) string {
	var names []string
	for _, p := range Parts {
		if parts[p] > 0 {
			names = append(names, fmt.Sprintf("%d %s", parts[p], p))
		}
	}
	return strings.Join(names, ", ")
}

// presentDesigns are the designs of the rows, less those run only in the
// peers part, which has its own table of them.
func presentDesigns(rows []Row) []string {
	have := map[string]bool{}
	for _, r := range rows {
		if r.Part != PartPeers {
			have[r.Params.Design] = true
		}
	}
	var out []string
	for _, d := range catalog.Names() {
		if have[d] {
			out = append(out, d)
		}
	}
	return out
}

func presentFloods(rows []Row) []float64 {
	have := map[float64]bool{}
	for _, r := range rows {
		if (r.Part == PartFlood || r.Part == PartFixed) && r.Params.Traffic.Kind == sim.Flood {
			have[r.Params.Traffic.Factor] = true
		}
	}
	var out []float64
	for m := range have {
		out = append(out, m)
	}
	sort.Float64s(out)
	return out
}

func presentInts(rows []Row, f func(Row) (int, bool)) []int {
	have := map[int]bool{}
	for _, r := range rows {
		if v, ok := f(r); ok {
			have[v] = true
		}
	}
	var out []int
	for v := range have {
		out = append(out, v)
	}
	sort.Ints(out)
	return out
}

func presentDurations(rows []Row, part string) []time.Duration {
	have := map[time.Duration]bool{}
	for _, r := range rows {
		if r.Part == part {
			have[r.Params.Sync] = true
		}
	}
	var out []time.Duration
	for v := range have {
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func floats(v []int) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

func seconds(v []time.Duration) []float64 {
	out := make([]float64, len(v))
	for i, d := range v {
		out[i] = d.Seconds()
	}
	return out
}

// addChart keeps c for drawing and links it from the report, or says that
// these results hold no data for it.
func (r *Report) addChart(b *strings.Builder, alt string, c chart) {
	if _, ok := c.drawable(); !ok {
		fmt.Fprintf(b, "\n(No data for the plot %q in these results.)\n\n", alt)
		return
	}
	r.charts = append(r.charts, c)
	fmt.Fprintf(b, "\n![%s](%s)\n\n", alt, c.file)
}
