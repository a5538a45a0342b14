package study

import (
	"os"
	"path/filepath"
	"testing"

	"gonum.org/v1/plot/plotter"
)

// A chart on log axes whose data is one value (a single design whose
// admitted_x is 1 at every flood rate, as `study --filter design=headroom`
// draws) is drawn, not a panic, in one plot and in small multiples.
func TestLogChartOfOneValue(t *testing.T) {
	dir := t.TempDir()
	pts := plotter.XYs{{X: 10, Y: 1}, {X: 100, Y: 1}, {X: 1000, Y: 1}}
	for _, multiples := range []bool{false, true} {
		c := chart{file: "one.png", title: "one value", xlabel: "x", ylabel: "y", logX: true, logY: true,
			series: []series{{name: "headroom", pts: pts}}, multiples: multiples}
		if err := c.draw(dir); err != nil {
			t.Fatal(err)
		}
		if st, err := os.Stat(filepath.Join(dir, "one.png")); err != nil || st.Size() == 0 {
			t.Fatalf("multiples %v: no plot written (%v)", multiples, err)
		}
	}
	one := chart{file: "x.png", logX: true, logY: true, series: []series{{name: "d", pts: plotter.XYs{{X: 8, Y: 2}}}}}
	if err := one.draw(dir); err != nil {
		t.Fatal(err)
	}
}
