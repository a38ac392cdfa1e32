package chart

import (
	"fmt"
	"image/color"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// Span is one bar of a timeline: row Row (an index into the rows given to
// TimelinePlot) is busy with Kind (an index into the kinds) from Start to
// End.
type Span struct {
	Row, Kind  int
	Start, End float64
}

// timelineColors are the kinds' colours, in order: distinguishable and
// printable in grey.
var timelineColors = []color.Color{
	color.RGBA{44, 160, 44, 255},   // green
	color.RGBA{31, 119, 180, 255},  // blue
	color.RGBA{255, 127, 14, 255},  // orange
	color.RGBA{214, 39, 40, 255},   // red
	color.RGBA{148, 103, 189, 255}, // purple
	color.RGBA{127, 127, 127, 255}, // grey
}

// TimelinePlot writes a PNG timeline to path: one horizontal row per name in
// rows (the first at the top), a filled bar per span coloured by its kind,
// a legend of kinds. Time without a span is left blank.
func TimelinePlot(path, title, xLabel string, rows, kinds []string, spans []Span) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xLabel
	n := len(rows)
	// Rows are drawn at y = n-1-i so that the first is on top.
	names := make([]string, n)
	for i, r := range rows {
		names[n-1-i] = r
	}
	polys := make([][]plotter.XYer, len(kinds))
	for _, s := range spans {
		if s.Row < 0 || s.Row >= n || s.Kind < 0 || s.Kind >= len(kinds) {
			return fmt.Errorf("chart: timeline %s: span %+v outside %d rows and %d kinds", path, s, n, len(kinds))
		}
		if s.End <= s.Start {
			continue
		}
		y := float64(n - 1 - s.Row)
		polys[s.Kind] = append(polys[s.Kind], plotter.XYs{
			{X: s.Start, Y: y - 0.35}, {X: s.End, Y: y - 0.35}, {X: s.End, Y: y + 0.35}, {X: s.Start, Y: y + 0.35},
		})
	}
	for k, name := range kinds {
		if len(polys[k]) == 0 {
			continue
		}
		poly, err := plotter.NewPolygon(polys[k]...)
		if err != nil {
			return fmt.Errorf("chart: timeline %s: %w", path, err)
		}
		poly.Color = timelineColors[k%len(timelineColors)]
		poly.LineStyle.Width = 0
		p.Add(poly)
		p.Legend.Add(name, poly)
	}
	p.NominalY(names...)
	p.Legend.Top = true
	p.Legend.Left = false
	h := vg.Length(2+0.35*float64(n)) * vg.Inch
	if err := p.Save(10*vg.Inch, h, path); err != nil {
		return fmt.Errorf("chart: timeline %s: %w", path, err)
	}
	return nil
}
