package cpu

import (
	"math"

	"github.com/cotrain/cotrain/gpu"
)

// lrnScale sets s[c] (one pixel's C values, stride hw in x) for g: the
// window sums in float64.
func lrnScale(g gpu.LRNGeom, s []float64, x []float32, base int) {
	k := float64(g.Alpha) / float64(g.Size)
	for c := range s {
		var sum float64
		for i := max(0, c-g.Before()); i <= min(g.C-1, c+g.After()); i++ {
			v := float64(x[base+i*g.HW])
			sum += float64(v * v)
		}
		s[c] = float64(g.Bias) + float64(k*sum)
	}
}

// LRN implements gpu.Backend: per pixel, the channel window sums of x². It
// runs on the calling goroutine (not split over the job threads, whose
// operation table the elementwise-operator work is reshaping).
func (*CPU) LRN(g gpu.LRNGeom, y, x gpu.Buffer) {
	g.Check("LRN", y, x)
	ys, xs := h(y), h(x)
	s := make([]float64, g.C)
	for id := range g.N * g.HW {
		base := (id/g.HW)*g.C*g.HW + id%g.HW
		lrnScale(g, s, xs, base)
		for ch := range s {
			i := base + ch*g.HW
			ys[i] = float32(float64(xs[i]) * math.Pow(s[ch], -float64(g.Beta)))
		}
	}
}

// LRNBackward implements gpu.Backend, on the calling goroutine as LRN.
func (*CPU) LRNBackward(g gpu.LRNGeom, dx, dy, x, y gpu.Buffer) {
	g.Check("LRNBackward", dx, dy, x, y)
	dxs, dys, xs, ys := h(dx), h(dy), h(x), h(y)
	k := 2 * float64(g.Alpha) * float64(g.Beta) / float64(g.Size)
	s := make([]float64, g.C)
	r := make([]float64, g.C) // dy·y/s per channel
	for id := range g.N * g.HW {
		base := (id/g.HW)*g.C*g.HW + id%g.HW
		lrnScale(g, s, xs, base)
		for ch := range s {
			i := base + ch*g.HW
			r[ch] = float64(dys[i]) * float64(ys[i]) / s[ch]
		}
		for ch := range s {
			// Channel ch is in the window of j for ch-After <= j <= ch+Before.
			var sum float64
			for j := max(0, ch-g.After()); j <= min(g.C-1, ch+g.Before()); j++ {
				sum += r[j]
			}
			i := base + ch*g.HW
			dxs[i] = float32(float64(float64(dys[i])*math.Pow(s[ch], -float64(g.Beta))) - float64(k*float64(xs[i])*sum))
		}
	}
}
