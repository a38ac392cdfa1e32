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

// LinePlot writes a PNG line plot of series to path.
func LinePlot(path, title, xLabel, yLabel string, series ...Series) error {
	p := plot.New()
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
		l.Width = vg.Points(1.5)
		p.Add(l)
		p.Legend.Add(s.Name, l)
	}
	p.Legend.Top = true
	if err := p.Save(8*vg.Inch, 5*vg.Inch, path); err != nil {
		return fmt.Errorf("chart: plot %s: %w", path, err)
	}
	return nil
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
