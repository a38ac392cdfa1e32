package chart

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// Series is one named line of a plot.
type Series struct {
	Name string
	X, Y []float64
}

// palette gives distinguishable line colours.
var palette = []color.Color{
	color.RGBA{31, 119, 180, 255}, color.RGBA{255, 127, 14, 255}, color.RGBA{44, 160, 44, 255},
	color.RGBA{214, 39, 40, 255}, color.RGBA{148, 103, 189, 255}, color.RGBA{140, 86, 75, 255},
}

// LinePlot writes a PNG line plot of series to path, its legend beside
// the axes (one series: the training loss, drawn in Loss's colour, needs
// none). The y axis starts at 0 when no value is below it: a loss or an
// accuracy has no negative values to show.
func LinePlot(path, title, xLabel, yLabel string, series ...Series) error {
	p := plot.New()
	leg := plot.NewLegend()
	p.Title.Text = title
	p.X.Label.Text = xLabel
	p.Y.Label.Text = yLabel
	p.Add(plotter.NewGrid())
	for i, s := range series {
		if len(s.X) != len(s.Y) {
			return fmt.Errorf("chart: plot %s: series %s has %d x and %d y", path, s.Name, len(s.X), len(s.Y))
		}
		// A NaN or infinite point (a diverged loss) is left out, not an
		// error: the plot is a view of the run, never a reason to fail it.
		pts := make(plotter.XYs, 0, len(s.X))
		for j := range s.X {
			if finite(s.X[j]) && finite(s.Y[j]) {
				pts = append(pts, plotter.XY{X: s.X[j], Y: s.Y[j]})
			}
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return fmt.Errorf("chart: plot %s: %w", path, err)
		}
		l.Color = palette[i%len(palette)]
		if len(series) == 1 {
			l.Color = Loss
		}
		l.Width = vg.Points(1.5)
		p.Add(l)
		leg.Add(s.Name, l)
	}
	if p.Y.Min >= 0 && p.Y.Min <= p.Y.Max { // some data, none below 0
		p.Y.Min = 0
	}
	entries := len(series)
	if entries == 1 {
		entries = 0 // the title names the one line
	}
	if err := save(p, leg, entries, 8*vg.Inch, 5*vg.Inch, path); err != nil {
		return fmt.Errorf("chart: plot %s: %w", path, err)
	}
	return nil
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
