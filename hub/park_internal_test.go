package hub

import (
	"math"
	"testing"
)

// TestPredictPerSample checks the parking model against hand-computed
// values: (global/Σ tput + Σ cost) / global over the workers in the set,
// and max(global/Σ tput, Σ cost) / global when pushes overlap compute.
func TestPredictPerSample(t *testing.T) {
	cases := []struct {
		name    string
		global  int
		tput    []float64
		cost    []float64
		in      []bool
		overlap bool
		want    float64
	}{
		{"one worker", 64, []float64{1}, []float64{36}, []bool{true}, false, (64 + 36) / 64.0},
		{"two add up", 60, []float64{1, 2}, []float64{10, 20}, []bool{true, true}, false, (20 + 30) / 60.0},
		{"one left out", 60, []float64{1, 2}, []float64{10, 20}, []bool{false, true}, false, (30 + 20) / 60.0},
		{"unknown counts as mean", 60, []float64{3, 0}, []float64{0, 0}, []bool{true, true}, false, 10 / 60.0},
		{"overlap: compute bound", 60, []float64{1, 2}, []float64{10, 5}, []bool{true, true}, true, 20 / 60.0},
		{"overlap: network bound", 60, []float64{1, 2}, []float64{10, 20}, []bool{true, true}, true, 30 / 60.0},
		{"nothing known", 10, []float64{0}, []float64{5}, []bool{true}, false, 0.5},
	}
	for _, tc := range cases {
		if got := predictPerSample(tc.global, tc.tput, tc.cost, tc.in, tc.overlap); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
