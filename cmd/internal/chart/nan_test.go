package chart

import (
	"math"
	"path/filepath"
	"testing"
)

// TestLinePlotSkipsNonFinite: a diverged loss (NaN, ±Inf) leaves a gap in
// the plot instead of failing it (issue 28: "plotter: NaN data point"
// failed a resumed run after its weights were written).
func TestLinePlotSkipsNonFinite(t *testing.T) {
	dir := t.TempDir()
	nan := math.NaN()
	for i, y := range [][]float64{{1, nan, 0.5, math.Inf(1)}, {nan, nan, nan, nan}} {
		s := Series{Name: "loss", X: []float64{1, 2, 3, 4}, Y: y}
		if err := LinePlot(filepath.Join(dir, "p.png"), "t", "x", "y", s); err != nil {
			t.Errorf("series %d: %v", i, err)
		}
	}
}
