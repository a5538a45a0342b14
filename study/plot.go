package study

import (
	"image/color"
	"math"
	"path/filepath"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// series is one named line or point cloud of a chart.
type series struct {
	name   string
	pts    plotter.XYs
	points bool // scatter only
	line   bool // line only, no markers (a fitted law)
	color  int  // index into plotutil's palette
}

// chart is a plot to draw into a PNG.
type chart struct {
	file, title, xlabel, ylabel string
	logX, logY                  bool
	xticks                      []float64 // label these x values instead of the default ticks
	series                      []series
	// headroom raises the y axis so that the data keep to its lower 60%
	// and the legend, top left, hides none of it (linear y only)
	headroom bool
}

// drawable returns c without the points a log axis cannot show, and
// whether anything is left to draw.
func (c chart) drawable() (chart, bool) {
	out := c
	out.series = nil
	any := false
	for _, s := range c.series {
		var pts plotter.XYs
		for _, pt := range s.pts {
			if (c.logX && pt.X <= 0) || (c.logY && pt.Y <= 0) {
				continue
			}
			pts = append(pts, pt)
		}
		s.pts = pts
		out.series = append(out.series, s)
		any = any || len(pts) > 0 && !s.line
	}
	return out, any
}

func (c chart) draw(dir string) error {
	c, ok := c.drawable()
	if !ok {
		return nil
	}
	p := plot.New()
	p.Title.Text = c.title
	p.X.Label.Text = c.xlabel
	p.Y.Label.Text = c.ylabel
	if c.logX {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	if c.logY {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = logTicks{}
	}
	if len(c.xticks) > 0 {
		var ticks plot.ConstantTicks
		for _, x := range c.xticks {
			ticks = append(ticks, plot.Tick{Value: x, Label: strconv.FormatFloat(x, 'g', -1, 64)})
		}
		p.X.Tick.Marker = ticks
	}
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	p.Legend.Left = true
	for _, s := range c.series {
		if len(s.pts) == 0 {
			continue
		}
		col := seriesColor(s.color)
		switch {
		case s.points:
			sc, err := plotter.NewScatter(s.pts)
			if err != nil {
				return err
			}
			sc.Color = col
			sc.Shape = plotutil.Shape(s.color)
			p.Add(sc)
			p.Legend.Add(s.name, sc)
		case s.line:
			l, err := plotter.NewLine(s.pts)
			if err != nil {
				return err
			}
			l.Color = col
			l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
			p.Add(l)
			if s.name != "" {
				p.Legend.Add(s.name, l)
			}
		default:
			l, sc, err := plotter.NewLinePoints(s.pts)
			if err != nil {
				return err
			}
			l.Color, sc.Color, sc.Shape = col, col, plotutil.Shape(s.color)
			p.Add(l, sc)
			p.Legend.Add(s.name, l, sc)
		}
	}
	if c.headroom && !c.logY {
		lo, hi := p.Y.Min, p.Y.Max
		p.Y.Max = lo + (hi-lo)/0.6
	}
	return p.Save(7*vg.Inch, 4.5*vg.Inch, filepath.Join(dir, c.file))
}

// logTicks labels a log axis at 1, 2 and 5 times each power of ten (only
// the powers when the axis spans more than three decades), so that an axis
// from 0.9 to 8 reads more than "1".
type logTicks struct{}

// Ticks returns the ticks between min and max.
func (logTicks) Ticks(min, max float64) []plot.Tick {
	if min <= 0 || max <= min {
		return plot.LogTicks{Prec: -1}.Ticks(min, max)
	}
	steps := []float64{1, 2, 5}
	if max/min > 1000 {
		steps = []float64{1}
	}
	var ticks []plot.Tick
	for dec := math.Pow(10, math.Floor(math.Log10(min))); dec <= max; dec *= 10 {
		for _, m := range steps {
			if v := m * dec; v >= min && v <= max {
				ticks = append(ticks, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'g', -1, 64)})
			}
		}
	}
	return ticks
}

// seriesColor is the colour of series i: plotutil's seven soft colours,
// then black (headroom, the eighth design, would otherwise take
// central-log's red), grey (the ninth, caddy-distributed, whose marker is
// central-log's ring again), then the dark ones.
func seriesColor(i int) color.Color {
	soft := plotutil.SoftColors
	switch {
	case i < len(soft):
		return soft[i]
	case i == len(soft):
		return color.Black
	case i == len(soft)+1:
		return color.Gray{Y: 0x70}
	}
	return plotutil.DarkColors[(i-len(soft)-2)%len(plotutil.DarkColors)]
}
