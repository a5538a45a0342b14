package study

import (
	"image/color"
	"math"
	"os"
	"path/filepath"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// series is one named line or point cloud of a chart.
type series struct {
	name   string
	pts    plotter.XYs
	points bool // scatter only
	line   bool // line only, no markers (a fitted law), dashed
	dotted bool // with line: dotted, not dashed
	color  int  // index into plotutil's palette
}

// chart is a plot to draw into a PNG.
type chart struct {
	file, title, xlabel, ylabel string
	logX, logY                  bool
	xticks                      []float64 // label these x values instead of the default ticks
	series                      []series
	// headroom raises the y axis a little above the data (linear y only)
	headroom bool
	// multiples draws one small panel per series instead of one plot
	multiples bool
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
	if c.multiples {
		return c.drawMultiples(dir)
	}
	c, ok := c.drawable()
	if !ok {
		return nil
	}
	p := plot.New()
	p.Title.Text = c.title
	p.X.Label.Text = c.xlabel
	p.Y.Label.Text = c.ylabel
	c.axes(p)
	legend := plot.NewLegend()
	legend.Top, legend.Left = true, true
	for _, s := range c.series {
		if err := s.add(p, &legend); err != nil {
			return err
		}
	}
	if c.headroom && !c.logY {
		lo, hi := p.Y.Min, p.Y.Max
		p.Y.Max = lo + (hi-lo)/0.85
	}
	c.widenLog(p)
	return save(p, legend, filepath.Join(dir, c.file))
}

// axes gives p c's scales and ticks (log axes ticked at 1, 2 and 5, or
// c's own x ticks) and a grid.
func (c chart) axes(p *plot.Plot) {
	if c.logX {
		p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, logTicks{}
	}
	if c.logY {
		p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, logTicks{}
	}
	if len(c.xticks) > 0 {
		var ticks plot.ConstantTicks
		for _, x := range c.xticks {
			ticks = append(ticks, plot.Tick{Value: x, Label: strconv.FormatFloat(x, 'g', -1, 64)})
		}
		p.X.Tick.Marker = ticks
	}
	p.Add(plotter.NewGrid())
}

// add draws s on p in its style and names it in legend.
func (s series) add(p *plot.Plot, legend *plot.Legend) error {
	if len(s.pts) == 0 {
		return nil
	}
	col := seriesColor(s.color)
	switch {
	case s.points:
		sc, err := plotter.NewScatter(s.pts)
		if err != nil {
			return err
		}
		sc.Color, sc.Shape = col, seriesShape(s.color)
		p.Add(sc)
		legend.Add(s.name, sc)
	case s.line:
		l, err := plotter.NewLine(s.pts)
		if err != nil {
			return err
		}
		l.Color, l.Dashes = col, []vg.Length{vg.Points(5), vg.Points(3)}
		if s.dotted {
			l.Dashes = []vg.Length{vg.Points(1), vg.Points(2)}
		}
		p.Add(l)
		if s.name != "" { // a law drawn for every K: its legend entry in grey
			thumb := *l
			thumb.Color = color.Gray{Y: 0x50}
			legend.Add(s.name, &thumb)
		}
	default:
		l, sc, err := plotter.NewLinePoints(s.pts)
		if err != nil {
			return err
		}
		l.Color, l.Dashes = col, seriesDashes(s.color)
		sc.Color, sc.Shape = col, seriesShape(s.color)
		p.Add(l, sc)
		legend.Add(s.name, l, sc)
	}
	return nil
}

// legendWidth is the strip right of the data that holds the legend.
const legendWidth = 2.2 * vg.Inch

// save draws p with its legend in a strip to the right of the data, where
// it hides none of it, into a PNG file.
func save(p *plot.Plot, legend plot.Legend, file string) error {
	w, h := 8.5*vg.Inch, 4.5*vg.Inch
	img := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(96))
	dc := draw.New(img)
	p.Draw(draw.Crop(dc, 0, -legendWidth, 0, 0))
	strip := draw.Crop(dc, w-legendWidth+vg.Points(6), 0, 0, -vg.Points(24))
	legend.Draw(strip)
	return writePNG(img, file)
}

// writePNG writes img to file as a PNG.
func writePNG(img *vgimg.Canvas, file string) error {
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// drawMultiples draws c as small multiples: one panel per series, in its
// own style, over the others in light grey, every panel on the same axes,
// so that series lying on one another can still be told apart.
func (c chart) drawMultiples(dir string) error {
	c, ok := c.drawable()
	if !ok {
		return nil
	}
	var shown []series
	for _, s := range c.series {
		if len(s.pts) > 0 {
			shown = append(shown, s)
		}
	}
	cols := 3
	rows := (len(shown) + cols - 1) / cols
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range shown {
		for _, pt := range s.pts {
			lo, hi = math.Min(lo, pt.Y), math.Max(hi, pt.Y)
		}
	}
	if !c.logY { // a little room above and below
		pad := math.Max((hi-lo)*0.08, 0.01)
		lo, hi = lo-pad, hi+pad
	}
	panels := make([][]*plot.Plot, rows)
	for r := range panels {
		panels[r] = make([]*plot.Plot, cols)
		for col := range panels[r] {
			i := r*cols + col
			if i >= len(shown) {
				continue
			}
			p, err := c.panel(shown, i, lo, hi, r == rows-1)
			if err != nil {
				return err
			}
			panels[r][col] = p
		}
	}
	w, h := 8.5*vg.Inch, (1.2+1.9*vg.Length(rows))*vg.Inch
	img := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(96))
	dc := draw.New(img)
	title := plot.New()
	title.Title.Text = c.title + "\n" + c.ylabel + ", against " + c.xlabel
	title.HideAxes()
	title.Draw(draw.Crop(dc, 0, 0, h-vg.Points(36), 0))
	canvases := plot.Align(panels, draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Points(6), PadY: vg.Points(6),
		PadTop: vg.Points(4)}, draw.Crop(dc, 0, 0, 0, -vg.Points(38)))
	for r := range panels {
		for col, p := range panels[r] {
			if p != nil {
				p.Draw(canvases[r][col])
			}
		}
	}
	return writePNG(img, filepath.Join(dir, c.file))
}

// panel is small multiple i of shown: series i in its style over the
// others in light grey, y from lo to hi; the x label only on the bottom
// row (the chart's title names both axes).
func (c chart) panel(shown []series, i int, lo, hi float64, bottom bool) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = shown[i].name
	if bottom {
		p.X.Label.Text = c.xlabel
	}
	c.axes(p)
	p.Y.Min, p.Y.Max = lo, hi
	for j, s := range shown {
		if j == i {
			continue
		}
		l, err := plotter.NewLine(s.pts)
		if err != nil {
			return nil, err
		}
		l.Color = color.Gray{Y: 0xdc}
		p.Add(l)
	}
	var none plot.Legend
	if err := shown[i].add(p, &none); err != nil {
		return nil, err
	}
	c.widenLog(p)
	return p, nil
}

// widenLog gives a log axis whose data is one value a range around it:
// gonum widens an empty range by 1 either way, which reaches 0 and panics
// on a log scale (a single design whose admitted_x is 1 everywhere).
func (c chart) widenLog(p *plot.Plot) {
	if c.logX && p.X.Min >= p.X.Max {
		p.X.Min, p.X.Max = p.X.Min/2, p.X.Max*2
	}
	if c.logY && p.Y.Min >= p.Y.Max {
		p.Y.Min, p.Y.Max = p.Y.Min/2, p.Y.Max*2
	}
}

// okabeIto is Okabe and Ito's palette, told apart by readers with any
// common colour-vision deficiency (its yellow left out: too pale on white;
// grey in its black's place),
// then black and brown (black eighth, for headroom, the study's eighth
// design).
var okabeIto = []color.Color{
	color.RGBA{0xE6, 0x9F, 0x00, 0xff}, // orange
	color.RGBA{0x56, 0xB4, 0xE9, 0xff}, // sky blue
	color.RGBA{0x00, 0x9E, 0x73, 0xff}, // bluish green
	color.RGBA{0x00, 0x72, 0xB2, 0xff}, // blue
	color.RGBA{0xD5, 0x5E, 0x00, 0xff}, // vermillion
	color.RGBA{0xCC, 0x79, 0xA7, 0xff}, // reddish purple
	color.Gray{Y: 0x80},
	color.Black,
	color.RGBA{0x88, 0x4C, 0x00, 0xff}, // brown
}

// seriesColor is the colour of series i, from the start again past the
// palette's nine; a marker and a line style tell apart the series that
// share a colour, and the ones that lie on top of one another.
func seriesColor(i int) color.Color { return okabeIto[i%len(okabeIto)] }

// shapes are the series' markers, one each for the first nine.
var shapes = []draw.GlyphDrawer{draw.CircleGlyph{}, draw.BoxGlyph{}, draw.TriangleGlyph{}, draw.RingGlyph{},
	draw.SquareGlyph{}, draw.PyramidGlyph{}, draw.CrossGlyph{}, draw.PlusGlyph{}, draw.CircleGlyph{}}

// seriesShape is the marker of series i.
func seriesShape(i int) draw.GlyphDrawer { return shapes[i%len(shapes)] }

// seriesDashes is the line style of series i: solid, dashed, dotted,
// dash-dot, long dashes, in turn.
func seriesDashes(i int) []vg.Length {
	styles := [][]vg.Length{nil, {vg.Points(6), vg.Points(3)}, {vg.Points(1.5), vg.Points(2)},
		{vg.Points(6), vg.Points(2), vg.Points(1.5), vg.Points(2)}, {vg.Points(10), vg.Points(3)}}
	return styles[i%len(styles)]
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
