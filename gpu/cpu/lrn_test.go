package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/cotrain/cotrain/gpu"
)

// refLRN is ONNX's LRN formula in float64, written from the operator's
// definition (window from c-floor((size-1)/2) to c+ceil((size-1)/2)).
func refLRN(g gpu.LRNGeom, x []float64) []float64 {
	y := make([]float64, len(x))
	lo, hi := (g.Size-1)/2, int(math.Ceil(float64(g.Size-1)/2))
	for n := range g.N {
		for c := range g.C {
			for p := range g.HW {
				var sum float64
				for i := max(0, c-lo); i <= min(g.C-1, c+hi); i++ {
					v := x[(n*g.C+i)*g.HW+p]
					sum += v * v
				}
				s := float64(g.Bias) + float64(g.Alpha)/float64(g.Size)*sum
				k := (n*g.C+c)*g.HW + p
				y[k] = x[k] * math.Pow(s, -float64(g.Beta))
			}
		}
	}
	return y
}

// TestLRN checks LRN against the float64 formula and LRNBackward against
// central finite differences of Σ dy·LRN(x), for odd and even window
// sizes, a window wider than the channels, and AlexNet's and GoogLeNet's
// parameters.
func TestLRN(t *testing.T) {
	b := NewCPU()
	rng := rand.New(rand.NewPCG(27, 1))
	for _, g := range []gpu.LRNGeom{
		{N: 2, C: 7, HW: 5, Size: 5, Alpha: 0.5, Beta: 0.75, Bias: 2},   // AlexNet's shape (alpha raised to matter)
		{N: 2, C: 7, HW: 3, Size: 4, Alpha: 0.3, Beta: 0.75, Bias: 1},   // even: one more channel above
		{N: 1, C: 3, HW: 4, Size: 9, Alpha: 1, Beta: 0.5, Bias: 1},      // wider than the channels
		{N: 2, C: 6, HW: 2, Size: 1, Alpha: 0.2, Beta: 1, Bias: 1},      // the channel alone
		{N: 1, C: 16, HW: 9, Size: 5, Alpha: 1e-4, Beta: 0.75, Bias: 1}, // GoogLeNet's
	} {
		n := g.N * g.C * g.HW
		x, dy := make([]float32, n), make([]float32, n)
		x64 := make([]float64, n)
		for i := range x {
			x[i], dy[i] = float32(rng.NormFloat64()*1.5), float32(rng.NormFloat64())
			x64[i] = float64(x[i])
		}
		xb, yb, dyb, dxb := b.Alloc(n), b.Alloc(n), b.Alloc(n), b.Alloc(n)
		b.Upload(xb, x)
		b.Upload(dyb, dy)
		b.LRN(g, yb, xb)
		b.LRNBackward(g, dxb, dyb, xb, yb)
		y, dx := make([]float32, n), make([]float32, n)
		b.Download(y, yb)
		b.Download(dx, dxb)
		want := refLRN(g, x64)
		if e := maxRel(y, want); e > 1e-6 {
			t.Errorf("%+v: forward relative error %.3g", g, e)
		}
		// d/dx_i of Σ dy·y by central differences of the float64 formula.
		num := make([]float64, n)
		const h = 1e-5
		for i := range x64 {
			keep := x64[i]
			x64[i] = keep + h
			up := refLRN(g, x64)
			x64[i] = keep - h
			down := refLRN(g, x64)
			x64[i] = keep
			for k := range up {
				num[i] += float64(dy[k]) * (up[k] - down[k]) / (2 * h)
			}
		}
		if e := maxRel(dx, num); e > 1e-5 {
			t.Errorf("%+v: backward relative error %.3g against finite differences", g, e)
		}
	}
}

// maxRel is max|got-want| / max|want|.
func maxRel(got []float32, want []float64) float64 {
	var diff, scale float64
	for i := range want {
		diff = max(diff, math.Abs(float64(got[i])-want[i]))
		scale = max(scale, math.Abs(want[i]))
	}
	return diff / scale
}
