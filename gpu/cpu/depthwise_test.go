package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/gputest"
	"github.com/cotrain/cotrain/gpu/internal/sgemm"
)

// The 3×3 depthwise kernels give the same bits as the general depthwise
// loops they replace, over strides, paddings, channel multipliers and planes
// narrower than the kernel (where every output is an edge): the per-row
// kernels and, at strides 1 and 2, the padded ones. The one exception is the
// padded filter gradient, whose 16-lane sums run in another order: there
// the difference from the general loop must stay within float32 rounding
// of the sum of |terms|.
func TestDepthwise3x3SameBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 3))
	var th sgemm.Thread // scratch of the padded kernels, dirty from one case to the next
	n, padded, paddedData := 0, 0, 0
	for _, hw := range [][2]int{{1, 1}, {2, 3}, {3, 3}, {4, 7}, {8, 5}, {9, 16}, {4, 21}, {6, 40}} {
		for stride := 1; stride <= 3; stride++ {
			for pad := 0; pad <= 2; pad++ {
				for _, m := range []int{1, 2} {
					g := gpu.ConvGeom{N: 2, C: 3, H: hw[0], W: hw[1], K: 3 * m, R: 3, S: 3,
						StrideH: stride, StrideW: stride, PadH: pad, PadW: pad, Groups: 3}
					if g.Setup() != nil || !cg(&g).Depthwise() {
						continue // the kernel does not fit the padded plane
					}
					n++
					name := fmt.Sprintf("%dx%d_s%d_p%d_m%d", g.H, g.W, stride, pad, m)
					x := gputest.Rand(rng, g.N*g.C*g.H*g.W)
					w := gputest.Rand(rng, g.K*9)
					dy := gputest.Rand(rng, g.N*g.K*g.OH*g.OW)

					want, got := nanSlice(len(dy)), nanSlice(len(dy))
					cg(&g).depthwiseForward(want, x, w, 0, g.N)
					cg(&g).depthwise3x3Forward(got, x, w, 0, g.N)
					dw3SameBits(t, name+" forward", got, want)
					if cg(&g).dw3Padded() {
						padded++
						got = nanSlice(len(dy))
						cg(&g).depthwise3x3PaddedForward(&th, got, x, w, 0, g.N)
						dw3SameBits(t, name+" padded forward", got, want)
					}

					want, got = nanSlice(len(w)), nanSlice(len(w))
					cg(&g).depthwiseBackwardFilter(want, dy, x, 0, g.K)
					cg(&g).depthwise3x3BackwardFilter(got, dy, x, 0, g.K)
					dw3SameBits(t, name+" filter", got, want)
					if cg(&g).dw3Padded() {
						got = nanSlice(len(w))
						cg(&g).depthwise3x3PaddedFilter(&th, got, dy, x, 0, g.K)
						scale := make([]float32, len(w))
						cg(&g).depthwiseBackwardFilter(scale, absSlice(dy), absSlice(x), 0, g.K)
						for i := range want {
							if d := math.Abs(float64(got[i] - want[i])); !(d <= 1e-6*float64(scale[i])) {
								t.Errorf("%s padded filter: [%d] = %v, general loop %v (|terms| %v)", name, i, got[i], want[i], scale[i])
							}
						}
					}

					want = nanSlice(len(x))
					cg(&g).depthwiseBackwardData(want, dy, w, 0, g.N)
					if stride == 1 && m == 1 {
						got = nanSlice(len(x))
						cg(&g).depthwise3x3BackwardData(got, dy, w, 0, g.N)
						dw3SameBits(t, name+" data", got, want)
					}
					if cg(&g).dw3PaddedData() {
						paddedData++
						got = nanSlice(len(x))
						cg(&g).depthwise3x3PaddedData(&th, got, dy, w, 0, g.N)
						dw3SameBits(t, name+" padded data", got, want)
					}
				}
			}
		}
	}
	if n < 40 || padded < 30 || paddedData < 15 {
		t.Fatalf("only %d geometries fit, %d padded (%d input gradients): the table no longer tests the edges", n, padded, paddedData)
	}
}

func absSlice(s []float32) []float32 {
	a := make([]float32, len(s))
	for i, v := range s {
		a[i] = float32(math.Abs(float64(v)))
	}
	return a
}

func dw3SameBits(t *testing.T, what string, got, want []float32) {
	t.Helper()
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Errorf("%s: [%d] = %v, general loop %v", what, i, got[i], want[i])
			return
		}
	}
}

// BenchmarkDepthwise puts the 3×3 kernels (per row, and padded at stride
// 1) beside the general loops on
// MobileNet v1 α=0.5's depthwise layers at 128×128, batch 16: the first (16
// channels of 64×64), a middle one (256 of 8×8) and a stride-2 one (32 of
// 64×64 to 32×32).
func BenchmarkDepthwise(b *testing.B) {
	for _, g := range []gpu.ConvGeom{
		{N: 16, C: 16, H: 64, W: 64, K: 16, R: 3, S: 3, PadH: 1, PadW: 1, Groups: 16},
		{N: 16, C: 256, H: 8, W: 8, K: 256, R: 3, S: 3, PadH: 1, PadW: 1, Groups: 256},
		{N: 16, C: 32, H: 64, W: 64, K: 32, R: 3, S: 3, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1, Groups: 32},
	} {
		b.Run(fmt.Sprintf("%dx%dx%d_s%d", g.C, g.H, g.W, max(g.StrideH, 1)), func(b *testing.B) { benchDepthwise(b, g) })
	}
}

func benchDepthwise(b *testing.B, g gpu.ConvGeom) {
	if err := g.Setup(); err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	x, w, dy := gputest.Rand(rng, g.N*g.C*g.H*g.W), gputest.Rand(rng, g.K*9), gputest.Rand(rng, g.N*g.K*g.OH*g.OW)
	y, dx, dw := make([]float32, len(dy)), make([]float32, len(x)), make([]float32, len(w))
	var th sgemm.Thread
	s1 := g.StrideH == 1 && g.StrideW == 1 && g.K == g.C
	for _, k := range []struct {
		name string
		ok   bool
		f    func()
	}{
		{"forward/general", true, func() { cg(&g).depthwiseForward(y, x, w, 0, g.N) }},
		{"forward/3x3", true, func() { cg(&g).depthwise3x3Forward(y, x, w, 0, g.N) }},
		{"forward/padded", cg(&g).dw3Padded(), func() { cg(&g).depthwise3x3PaddedForward(&th, y, x, w, 0, g.N) }},
		{"data/general", true, func() { cg(&g).depthwiseBackwardData(dx, dy, w, 0, g.N) }},
		{"data/3x3", s1, func() { cg(&g).depthwise3x3BackwardData(dx, dy, w, 0, g.N) }},
		{"data/padded", cg(&g).dw3PaddedData(), func() { cg(&g).depthwise3x3PaddedData(&th, dx, dy, w, 0, g.N) }},
		{"filter/general", true, func() { cg(&g).depthwiseBackwardFilter(dw, dy, x, 0, g.K) }},
		{"filter/3x3", true, func() { cg(&g).depthwise3x3BackwardFilter(dw, dy, x, 0, g.K) }},
		{"filter/padded", cg(&g).dw3Padded(), func() { cg(&g).depthwise3x3PaddedFilter(&th, dw, dy, x, 0, g.K) }},
	} {
		if !k.ok {
			continue
		}
		b.Run(k.name, func(b *testing.B) {
			for b.Loop() {
				k.f()
			}
		})
	}
}
