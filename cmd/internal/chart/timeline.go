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

// Kind is what a span's time was spent on, with its colour (Compute,
// Communication and its shades, Waiting).
type Kind struct {
	Name  string
	Color color.Color
}

// TimelinePlot writes a PNG timeline to path: one horizontal row per name in
// rows (the first at the top), a filled bar per span coloured by its kind,
// and the legend of kinds beside the plot. idle, when not "", names the
// time without a span, from 0 to the last span's end: every row is filled
// in Waiting's grey under its spans, as the dashboard's timeline shows it.
func TimelinePlot(path, title, xLabel string, rows []string, kinds []Kind, idle string, spans []Span) error {
	p := plot.New()
	leg := plot.NewLegend()
	p.Title.Text = title
	p.X.Label.Text = xLabel
	n := len(rows)
	// Rows are drawn at y = n-1-i so that the first is on top.
	names := make([]string, n)
	for i, r := range rows {
		names[n-1-i] = r
	}
	polys := make([][]plotter.XYer, len(kinds))
	end := 0.0
	for _, s := range spans {
		end = max(end, s.End)
	}
	if idle != "" && end > 0 {
		var bg []plotter.XYer
		for i := range n {
			y := float64(i)
			bg = append(bg, plotter.XYs{{X: 0, Y: y - 0.35}, {X: end, Y: y - 0.35}, {X: end, Y: y + 0.35}, {X: 0, Y: y + 0.35}})
		}
		poly, err := plotter.NewPolygon(bg...)
		if err != nil {
			return fmt.Errorf("chart: timeline %s: %w", path, err)
		}
		poly.Color, poly.LineStyle.Width = Waiting, 0
		p.Add(poly)
	}
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
	entries := 0
	for k, kind := range kinds {
		if len(polys[k]) == 0 {
			continue
		}
		poly, err := plotter.NewPolygon(polys[k]...)
		if err != nil {
			return fmt.Errorf("chart: timeline %s: %w", path, err)
		}
		poly.Color = kind.Color
		poly.LineStyle.Width = 0
		p.Add(poly)
		leg.Add(kind.Name, poly)
		entries++
	}
	if idle != "" && end > 0 {
		swatch, _ := plotter.NewPolygon(plotter.XYs{{}, {X: 1}, {X: 1, Y: 1}})
		swatch.Color, swatch.LineStyle.Width = Waiting, 0
		leg.Add(idle, swatch)
		entries++
	}
	p.NominalY(names...)
	p.X.Min = 0
	// The legend's rows need the height too.
	h := vg.Length(2+0.35*float64(max(n, entries/2))) * vg.Inch
	if err := save(p, leg, entries, 10*vg.Inch, h, path); err != nil {
		return fmt.Errorf("chart: timeline %s: %w", path, err)
	}
	return nil
}
