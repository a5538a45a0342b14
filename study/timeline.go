package study

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"slices"
	"strconv"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/fleetlimit/fleetlimit/sim"
)

// PictureBucket is the bucket width a picture of run p up to until is
// drawn in: about 480 of them, a whole number to Δ so that the syncs,
// every Δ, fall alike in each Δ of buckets.
func PictureBucket(p sim.Params, until time.Duration) time.Duration {
	const points = 480
	if until < p.Sync {
		return max(until/points, time.Millisecond)
	}
	per := (points*int64(p.Sync) + int64(until) - 1) / int64(until) // buckets to a Δ
	for n := per; n < 4*per; n++ {                                  // one that divides Δ, if near
		if int64(p.Sync)%n == 0 {
			per = n
			break
		}
	}
	return max(p.Sync/time.Duration(per), time.Millisecond)
}

// maxGatewayLines is the most gateways a timeline draws a view line each
// for; a larger fleet's views are drawn as their least, median and most.
const maxGatewayLines = 8

// TimelineFormats are the picture formats DrawTimeline writes.
var TimelineFormats = []string{"svg", "png"}

// DrawTimeline draws run p's timeline tl, with r its figures, as a picture
// in format ("svg" or "png") to w: the fleet's admits in the window against
// L, each gateway's view of the key, the syncs and round trips, and when
// each flood starts, over time, in the study's style (legends beside the
// data, lines told apart by dashes as well as colour).
func DrawTimeline(w io.Writer, format string, p sim.Params, r sim.Result, tl sim.Timeline) error {
	if !slices.Contains(TimelineFormats, format) {
		return fmt.Errorf("timeline picture format %q: want svg or png", format)
	}
	if len(tl.InWindow) == 0 {
		return fmt.Errorf("timeline: no bucket to draw")
	}
	panels, legends, err := timelinePanels(p, tl)
	if err != nil {
		return err
	}
	width, height := 8.5*vg.Inch, 8*vg.Inch
	var c vg.CanvasWriterTo
	if format == "svg" {
		c = vgsvg.New(width, height)
	} else {
		c = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(width, height), vgimg.UseDPI(96))}
	}
	dc := draw.New(c)
	title := plot.New()
	title.Title.Text = timelineTitle(p, r)
	title.HideAxes()
	top := vg.Points(44)
	title.Draw(draw.Crop(dc, 0, 0, height-top, 0))
	body := draw.Crop(dc, 0, -legendWidth, 0, -top)
	grid := make([][]*plot.Plot, len(panels))
	for i, p := range panels {
		grid[i] = []*plot.Plot{p}
	}
	tiles := draw.Tiles{Rows: len(panels), Cols: 1, PadY: vg.Points(10)}
	for i, cv := range plot.Align(grid, tiles, body) {
		panels[i].Draw(cv[0])
		strip := cv[0]
		strip.Min.X, strip.Max.X = width-legendWidth+vg.Points(6), width
		legends[i].Draw(strip)
	}
	_, err = c.WriteTo(w)
	return err
}

// timelineTitle names the run and its figures.
func timelineTitle(p sim.Params, r sim.Result) string {
	traffic := p.Traffic.String()
	for _, t := range p.Also {
		traffic += "," + t.String()
	}
	return fmt.Sprintf("%s: K = %d gateways, Δ = %v, L = %d per %v, %s, one key, seed %d\n"+
		"the whole run (%v): admitted %.2f × L a window, worst window %.2f × L, rejected %.2f%%, round trips %.2f%% of requests",
		p.Design, p.Gateways, p.Sync, p.Limit, p.Window, traffic, p.Seed, p.Duration,
		r.AdmittedX, r.WorstWindowX, r.RejectedPct, r.RoundTripPct)
}

// timelinePanels are the timeline's three panels, top to bottom, and each
// one's legend.
func timelinePanels(p sim.Params, tl sim.Timeline) ([]*plot.Plot, []plot.Legend, error) {
	builders := []func(sim.Params, sim.Timeline, *plot.Plot, *plot.Legend) error{admitsPanel, viewsPanel, callsPanel}
	panels := make([]*plot.Plot, len(builders))
	legends := make([]plot.Legend, len(builders))
	for i, build := range builders {
		pl := plot.New()
		pl.Add(plotter.NewGrid())
		pl.X.Tick.Marker, pl.Y.Tick.Marker = plainTicks{}, plainTicks{}
		legends[i] = plot.NewLegend()
		legends[i].Top, legends[i].Left = true, true
		if err := build(p, tl, pl, &legends[i]); err != nil {
			return nil, nil, err
		}
		pl.X.Min = 0
		pl.X.Max = float64(len(tl.InWindow)) * tl.Bucket.Seconds()
		if w := p.Window.Seconds(); pl.X.Max/w >= 2 && pl.X.Max/w <= 12 { // a tick each window
			var ticks plot.ConstantTicks
			for x := 0.0; x <= pl.X.Max+1e-9; x += w {
				ticks = append(ticks, plot.Tick{Value: x, Label: strconv.FormatFloat(x, 'g', 6, 64)})
			}
			pl.X.Tick.Marker = ticks
		}
		if err := floodStarts(p, pl, &legends[i], i == 0); err != nil {
			return nil, nil, err
		}
		panels[i] = pl
	}
	panels[len(panels)-1].X.Label.Text = "time from the run's start (s)"
	return panels, legends, nil
}

// bucketEnd is the time, in seconds, at the end of bucket b.
func bucketEnd(tl sim.Timeline, b int) float64 { return float64(b+1) * tl.Bucket.Seconds() }

// admitsPanel draws the fleet's admits in the window ending at each
// moment against L.
func admitsPanel(p sim.Params, tl sim.Timeline, pl *plot.Plot, lg *plot.Legend) error {
	pl.Title.Text = fmt.Sprintf("the fleet's admits in the %v window ending at t", p.Window)
	pl.Y.Label.Text = "admits"
	pts := make(plotter.XYs, len(tl.InWindow))
	for b, n := range tl.InWindow {
		pts[b] = plotter.XY{X: bucketEnd(tl, b), Y: float64(n)}
	}
	if err := addLine(pl, lg, "admits in the window", pts, color.Black, nil, 1.5); err != nil {
		return err
	}
	last := bucketEnd(tl, len(tl.InWindow)-1)
	limit := plotter.XYs{{X: 0, Y: float64(p.Limit)}, {X: last, Y: float64(p.Limit)}}
	if err := addLine(pl, lg, fmt.Sprintf("L = %d", p.Limit), limit, seriesColor(4), seriesDashes(1), 1); err != nil {
		return err
	}
	pl.Y.Min = 0
	return nil
}

// viewsPanel draws each gateway's view of the key: how many more requests
// it would admit (the least, median and most of a large fleet's).
func viewsPanel(p sim.Params, tl sim.Timeline, pl *plot.Plot, lg *plot.Legend) error {
	pl.Title.Text = "each gateway's view: how many more requests it would admit"
	pl.Y.Label.Text = "requests"
	if tl.Views == nil {
		pl.Title.Text += " (not drawn for a key with several limits)"
		return nil
	}
	k := len(tl.Views[0])
	if k <= maxGatewayLines {
		for g := range k {
			pts := viewPoints(tl, func(vs []int) (float64, bool) { return float64(vs[g]), vs[g] >= 0 })
			if err := addLine(pl, lg, fmt.Sprintf("gateway %d", g), pts, seriesColor(g), seriesDashes(g), 1); err != nil {
				return err
			}
		}
		return nil
	}
	for i, q := range []struct {
		name string
		at   float64
	}{{"least of the gateways", 0}, {"median gateway", 0.5}, {"most of the gateways", 1}} {
		pts := viewPoints(tl, func(vs []int) (float64, bool) {
			var in []int
			for _, v := range vs {
				if v >= 0 {
					in = append(in, v)
				}
			}
			if len(in) == 0 {
				return 0, false
			}
			slices.Sort(in)
			return float64(in[int(q.at*float64(len(in)-1))]), true
		})
		if err := addLine(pl, lg, q.name, pts, seriesColor(i), seriesDashes(i), 1); err != nil {
			return err
		}
	}
	return nil
}

// viewPoints is one line of the views panel: pick's value at each bucket
// where it has one.
func viewPoints(tl sim.Timeline, pick func([]int) (float64, bool)) plotter.XYs {
	var pts plotter.XYs
	for b, vs := range tl.Views {
		if y, ok := pick(vs); ok {
			pts = append(pts, plotter.XY{X: bucketEnd(tl, b), Y: y})
		}
	}
	return pts
}

// callsPanel draws the fleet's syncs and round trips a second, each over
// the last Δ (or bucket, when wider), so that syncs every Δ read as the
// steady rate they are.
func callsPanel(p sim.Params, tl sim.Timeline, pl *plot.Plot, lg *plot.Legend) error {
	span := max(int(math.Round(float64(p.Sync)/float64(tl.Bucket))), 1)
	pl.Title.Text = fmt.Sprintf("the fleet's calls to the store, over the last %v", (time.Duration(span) * tl.Bucket).Round(time.Millisecond))
	pl.Y.Label.Text = "per second"
	for i, s := range []struct {
		name string
		n    []int
	}{{"syncs", tl.Syncs}, {"round trips", tl.RoundTrips}} {
		pts := make(plotter.XYs, len(s.n))
		sum := 0
		for b, n := range s.n {
			sum += n
			if b >= span {
				sum -= s.n[b-span]
			}
			pts[b] = plotter.XY{X: bucketEnd(tl, b), Y: float64(sum) / (float64(span) * tl.Bucket.Seconds())}
		}
		if err := addLine(pl, lg, s.name, pts, seriesColor(3*i+1), seriesDashes(2*i), 1); err != nil {
			return err
		}
	}
	pl.Y.Min = 0
	return nil
}

// floodStarts marks when each flood of p starts with a vertical line,
// named in the legend when named is set.
func floodStarts(p sim.Params, pl *plot.Plot, lg *plot.Legend, named bool) error {
	for _, t := range p.Mix() {
		if t.Kind != sim.Flood {
			continue
		}
		lo, hi := pl.Y.Min, pl.Y.Max
		if hi <= lo {
			hi = lo + 1
		}
		x := t.Start.Seconds()
		pts := plotter.XYs{{X: x, Y: lo}, {X: x, Y: hi}}
		name := ""
		if named {
			name = fmt.Sprintf("flood ×%g starts (%v)", t.Factor, t.Start.Round(time.Millisecond))
		}
		if err := addLine(pl, lg, name, pts, color.Gray{Y: 0x50}, []vg.Length{vg.Points(1), vg.Points(2)}, 2); err != nil {
			return err
		}
	}
	return nil
}

// addLine adds a line in the given style to pl, named in lg unless name
// is "".
func addLine(pl *plot.Plot, lg *plot.Legend, name string, pts plotter.XYs, c color.Color, dashes []vg.Length, width float64) error {
	if len(pts) == 0 {
		return nil
	}
	l, err := plotter.NewLine(pts)
	if err != nil {
		return err
	}
	l.Color, l.Dashes, l.Width = c, dashes, vg.Points(width)
	pl.Add(l)
	if name != "" {
		lg.Add(name, l)
	}
	return nil
}

// plainTicks are gonum's default ticks labelled as short as they can be
// (250, not 250.00).
type plainTicks struct{}

// Ticks returns the ticks between min and max.
func (plainTicks) Ticks(min, max float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(min, max)
	for i := range ticks {
		if ticks[i].Label != "" {
			ticks[i].Label = strconv.FormatFloat(ticks[i].Value, 'g', 6, 64)
		}
	}
	return ticks
}
