package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/gputest"
)

// poolCases covers overlapping and gapped windows, padding, ceil mode (with
// and without a clipped last window), non-square windows and odd sizes.
var poolCases = []gpu.PoolGeom{
	{N: 2, C: 3, H: 6, W: 6, KH: 2, KW: 2},
	{N: 1, C: 2, H: 7, W: 7, KH: 3, KW: 3, StrideH: 2, StrideW: 2},
	{N: 2, C: 2, H: 7, W: 6, KH: 3, KW: 3, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1},
	{N: 1, C: 2, H: 5, W: 5, KH: 3, KW: 3, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1, CeilMode: true},
	{N: 2, C: 1, H: 6, W: 7, KH: 2, KW: 2, StrideH: 2, StrideW: 2, CeilMode: true},
	{N: 1, C: 3, H: 8, W: 5, KH: 3, KW: 2, StrideH: 3, StrideW: 1, PadH: 1, CeilMode: true},
	{N: 1, C: 2, H: 5, W: 9, KH: 2, KW: 4, StrideH: 1, StrideW: 3, PadH: 1, PadW: 2, CeilMode: true},
	{N: 2, C: 2, H: 4, W: 4, KH: 3, KW: 3, StrideH: 1, StrideW: 1, PadH: 1, PadW: 1},
	{N: 1, C: 1, H: 9, W: 9, KH: 2, KW: 2, StrideH: 3, StrideW: 3},
	{N: 2, C: 4, H: 5, W: 3, KH: 5, KW: 3},
	// Dilated windows (pool_dilated.go): with padding, ceil mode (a last
	// window past the padding), overlapping and gapped, 1-D (H = 1) and
	// windows whose first taps fall in the padding.
	{N: 2, C: 2, H: 9, W: 9, KH: 3, KW: 3, StrideH: 1, StrideW: 1, DilH: 2, DilW: 2},
	{N: 1, C: 2, H: 10, W: 11, KH: 3, KW: 2, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1, DilH: 2, DilW: 3, CeilMode: true},
	{N: 2, C: 1, H: 8, W: 13, KH: 2, KW: 3, StrideH: 3, StrideW: 2, PadH: 1, PadW: 1, DilH: 3, DilW: 2},
	{N: 1, C: 3, H: 1, W: 17, KH: 1, KW: 3, StrideH: 1, StrideW: 2, PadW: 1, DilW: 3, CeilMode: true},
	{N: 1, C: 2, H: 7, W: 7, KH: 2, KW: 2, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1, DilH: 2, DilW: 2, CeilMode: true},
}

// poolNaive computes pooling from the definition, enumerating every window
// tap (DilH, DilW apart): for max, taps on padding are skipped (-inf) and the first maximum in
// row-major order wins; for the average, the divisor counts taps inside the
// padded input (CountIncludePad) or inside the input.
func poolNaive(g gpu.PoolGeom, x, dy []float32) (maxY, maxDX, avgY, avgDX []float64) {
	ohw, hw := g.OH*g.OW, g.H*g.W
	maxY, avgY = make([]float64, g.N*g.C*ohw), make([]float64, g.N*g.C*ohw)
	maxDX, avgDX = make([]float64, len(x)), make([]float64, len(x))
	for p := 0; p < g.N*g.C; p++ {
		for oh := 0; oh < g.OH; oh++ {
			for ow := 0; ow < g.OW; ow++ {
				o := p*ohw + oh*g.OW + ow
				best, m := -1, math.Inf(-1)
				var sum float64
				var taps []int
				padded := 0
				for i := 0; i < g.KH; i++ {
					for j := 0; j < g.KW; j++ {
						ih, iw := oh*g.StrideH-g.PadH+i*g.DilH, ow*g.StrideW-g.PadW+j*g.DilW
						if ih < g.H+g.PadH && iw < g.W+g.PadW {
							padded++
						}
						if ih < 0 || ih >= g.H || iw < 0 || iw >= g.W {
							continue
						}
						xi := p*hw + ih*g.W + iw
						if v := float64(x[xi]); best < 0 || v > m {
							best, m = xi, v
						}
						sum += float64(x[xi])
						taps = append(taps, xi)
					}
				}
				maxY[o] = m
				maxDX[best] += float64(dy[o])
				div := float64(len(taps))
				if g.CountIncludePad {
					div = float64(padded)
				}
				avgY[o] = sum / div
				for _, xi := range taps {
					avgDX[xi] += float64(dy[o]) / div
				}
			}
		}
	}
	return maxY, maxDX, avgY, avgDX
}

func poolName(g gpu.PoolGeom) string {
	return fmt.Sprintf("N%dC%d_%dx%d_k%dx%d_s%dx%d_p%dx%d_d%dx%d_ceil%v_incl%v", g.N, g.C, g.H, g.W, g.KH, g.KW,
		g.StrideH, g.StrideW, g.PadH, g.PadW, max(g.DilH, 1), max(g.DilW, 1), g.CeilMode, g.CountIncludePad)
}

// poolClose compares with a tolerance relative to the value (pooling sums
// at most a window of terms of magnitude about 1).
func poolClose(got []float32, want []float64, tol float64) error {
	for i := range got {
		if d := math.Abs(float64(got[i]) - want[i]); !(d <= tol*max(math.Abs(want[i]), 1)) {
			return fmt.Errorf("[%d] = %g, want %g", i, got[i], want[i])
		}
	}
	return nil
}

func TestPoolAgainstNaive(t *testing.T) {
	c := NewCPU()
	rng := rand.New(rand.NewPCG(5, 6))
	for _, base := range poolCases {
		for _, incl := range []bool{false, true} {
			for _, ties := range []bool{false, true} {
				g := base
				g.CountIncludePad = incl
				if err := g.Setup(); err != nil {
					t.Fatalf("%s: %v", poolName(g), err)
				}
				t.Run(fmt.Sprintf("%s_ties%v", poolName(g), ties), func(t *testing.T) {
					x := gputest.Rand(rng, g.N*g.C*g.H*g.W)
					if ties {
						// Few distinct values: windows hold several maxima,
						// and the first one must take the gradient.
						for i := range x {
							x[i] = float32(rng.IntN(3))
						}
					}
					dy := gputest.Rand(rng, g.N*g.C*g.OH*g.OW)
					maxY, maxDX, avgY, avgDX := poolNaive(g, x, dy)
					y, dx := nanSlice(len(dy)), nanSlice(len(x))
					c.MaxPoolForward(g, gpu.Host(y), gpu.Host(x))
					if err := poolClose(y, maxY, 0); err != nil {
						t.Errorf("max forward: y%v", err)
					}
					c.MaxPoolBackward(g, gpu.Host(dx), gpu.Host(dy), gpu.Host(x))
					if err := poolClose(dx, maxDX, 1e-6); err != nil {
						t.Errorf("max backward: dx%v", err)
					}
					c.AvgPoolForward(g, gpu.Host(y), gpu.Host(x))
					if err := poolClose(y, avgY, 1e-6); err != nil {
						t.Errorf("avg forward: y%v", err)
					}
					c.AvgPoolBackward(g, gpu.Host(dx), gpu.Host(dy))
					if err := poolClose(dx, avgDX, 1e-6); err != nil {
						t.Errorf("avg backward: dx%v", err)
					}
				})
			}
		}
	}
}

// TestPoolPyTorchValues pins ceil mode's window and divisor rules to values
// printed by PyTorch 1.13 for x = arange(25).reshape(1,1,5,5)*0.5 - 3 with
// x[0,0,2,3] = 7 (F.avg_pool2d / F.max_pool2d).
func TestPoolPyTorchValues(t *testing.T) {
	x := make([]float32, 25)
	for i := range x {
		x[i] = float32(i)*0.5 - 3
	}
	x[2*5+3] = 7
	cases := []struct {
		name string
		g    gpu.PoolGeom
		max  bool
		want []float32
	}{
		{"avg k3 s2 p1 ceil include_pad", gpu.PoolGeom{KH: 3, KW: 3, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1, CeilMode: true, CountIncludePad: true}, false,
			[]float32{-0.6666666865348816, -0.5, 0.0, 1.5, 3.3888888359069824, 2.8888888359069824, 2.6666667461395264, 4.5, 3.3333332538604736}},
		{"avg k3 s2 p1 ceil exclude_pad", gpu.PoolGeom{KH: 3, KW: 3, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1, CeilMode: true}, false,
			[]float32{-1.5, -0.75, 0.0, 2.25, 3.3888888359069824, 4.333333492279053, 6.0, 6.75, 7.5}},
		{"avg k2x3 s2 p1x0 ceil include_pad", gpu.PoolGeom{KH: 2, KW: 3, StrideH: 2, StrideW: 2, PadH: 1, CeilMode: true, CountIncludePad: true}, false,
			[]float32{-1.25, -0.75, 1.25, 2.8333332538604736, 6.25, 7.25}},
		{"max k3 s2 p1 ceil", gpu.PoolGeom{KH: 3, KW: 3, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1, CeilMode: true}, true,
			[]float32{0.0, 1.0, 1.5, 5.0, 7.0, 7.0, 7.5, 8.5, 9.0}},
		{"max k2 s2 ceil", gpu.PoolGeom{KH: 2, KW: 2, CeilMode: true}, true,
			[]float32{0.0, 1.0, 1.5, 5.0, 7.0, 6.5, 7.5, 8.5, 9.0}},
	}
	c := NewCPU()
	for _, tc := range cases {
		g := tc.g
		g.N, g.C, g.H, g.W = 1, 1, 5, 5
		if err := g.Setup(); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if g.OH*g.OW != len(tc.want) {
			t.Errorf("%s: output %dx%d, want %d elements", tc.name, g.OH, g.OW, len(tc.want))
			continue
		}
		y := make([]float32, len(tc.want))
		if tc.max {
			c.MaxPoolForward(g, gpu.Host(y), gpu.Host(x))
		} else {
			c.AvgPoolForward(g, gpu.Host(y), gpu.Host(x))
		}
		for i := range y {
			if math.Abs(float64(y[i]-tc.want[i])) > 1e-6 {
				t.Errorf("%s: y = %v, want %v", tc.name, y, tc.want)
				break
			}
		}
	}
}

func TestMaxPoolNaN(t *testing.T) {
	// PyTorch propagates NaN through max pooling, and its gradient goes to
	// the NaN.
	c := NewCPU()
	g := gpu.PoolGeom{N: 1, C: 1, H: 2, W: 2, KH: 2, KW: 2}
	if err := g.Setup(); err != nil {
		t.Fatal(err)
	}
	nan := float32(math.NaN())
	x, y, dx := []float32{1, nan, 3, 2}, []float32{0}, make([]float32, 4)
	c.MaxPoolForward(g, gpu.Host(y), gpu.Host(x))
	if !math.IsNaN(float64(y[0])) {
		t.Errorf("max of a window with NaN = %g, want NaN", y[0])
	}
	c.MaxPoolBackward(g, gpu.Host(dx), gpu.Host([]float32{1}), gpu.Host(x))
	if want := []float32{0, 1, 0, 0}; fmt.Sprint(dx) != fmt.Sprint(want) {
		t.Errorf("dx = %v, want %v", dx, want)
	}
}

func TestPoolPanicsOnWrongLength(t *testing.T) {
	c := NewCPU()
	g := gpu.PoolGeom{N: 1, C: 1, H: 4, W: 4, KH: 2, KW: 2}
	if err := g.Setup(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if recover() == nil {
			t.Error("no panic for an output of the wrong length")
		}
	}()
	c.AvgPoolForward(g, c.Alloc(3), c.Alloc(16))
}

func BenchmarkPool(b *testing.B) {
	cases := []struct {
		name string
		g    gpu.PoolGeom
		max  bool
	}{
		{"lenet-max_b64_20ch_24x24_k2s2", gpu.PoolGeom{N: 64, C: 20, H: 24, W: 24, KH: 2, KW: 2}, true},
		{"overlap-max_b16_64ch_56x56_k3s2p1", gpu.PoolGeom{N: 16, C: 64, H: 56, W: 56, KH: 3, KW: 3, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1}, true},
		{"global-avg_b16_1024ch_7x7", gpu.PoolGeom{N: 16, C: 1024, H: 7, W: 7, KH: 7, KW: 7}, false},
		// pool_dilated.go's loops
		{"dilated-max_b16_64ch_56x56_k3s1p1d2", gpu.PoolGeom{N: 16, C: 64, H: 56, W: 56, KH: 3, KW: 3, StrideH: 1, StrideW: 1, PadH: 1, PadW: 1, DilH: 2, DilW: 2}, true},
		{"dilated-avg_b16_64ch_56x56_k3s1p1d2", gpu.PoolGeom{N: 16, C: 64, H: 56, W: 56, KH: 3, KW: 3, StrideH: 1, StrideW: 1, PadH: 1, PadW: 1, DilH: 2, DilW: 2, CountIncludePad: true}, false},
	}
	c := NewCPU()
	for _, tc := range cases {
		g := tc.g
		if err := g.Setup(); err != nil {
			b.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(1, 2))
		x, y := gpu.Host(gputest.Rand(rng, g.N*g.C*g.H*g.W)), gpu.Host(gputest.Rand(rng, g.N*g.C*g.OH*g.OW))
		dx := c.Alloc(x.Len())
		b.Run(tc.name+"/forward", func(b *testing.B) {
			for b.Loop() {
				if tc.max {
					c.MaxPoolForward(g, y, x)
				} else {
					c.AvgPoolForward(g, y, x)
				}
			}
		})
		b.Run(tc.name+"/backward", func(b *testing.B) {
			for b.Loop() {
				if tc.max {
					c.MaxPoolBackward(g, dx, y, x)
				} else {
					c.AvgPoolBackward(g, dx, y)
				}
			}
		})
	}
}

// TestMaxPoolPairsMatchGeneral: the 2×2 stride-2 path (vec.MaxPool2Backward,
// the general loop for planes with NaN) routes gradients exactly as the
// general window loop does, on data full of ties (equal values, +0 and -0)
// and NaN, where the first-maximum rule decides.
func TestMaxPoolPairsMatchGeneral(t *testing.T) {
	g := gpu.PoolGeom{N: 1, C: 1, H: 21, W: 17, KH: 2, KW: 2} // odd: a row and a column outside every window
	if err := g.Setup(); err != nil || !pg(&g).pairs() {
		t.Fatalf("setup %v, pairs %v", err, pg(&g).pairs())
	}
	rng := rand.New(rand.NewPCG(3, 3))
	values := []float32{-1, 0, float32(math.Copysign(0, -1)), 1, 2, float32(math.NaN())}
	for trial := 0; trial < 20; trial++ {
		x := make([]float32, g.H*g.W)
		for i := range x {
			x[i] = values[rng.IntN(len(values)-1+trial%2)] // NaN in every other trial
		}
		dy := gputest.Rand(rng, g.OH*g.OW)
		// The pairs path writes every cell (no clear first): start it on NaN.
		fast, slow := nanSlice(len(x)), make([]float32, len(x))
		pg(&g).maxBackward(fast, dy, x, 0, 1)
		pg(&g).maxBackwardPlane(x, slow, dy)
		if !gputest.SameBits(fast, slow) {
			t.Fatalf("trial %d: pairs loop routes differently:\n%v\n%v", trial, fast, slow)
		}
		y := make([]float32, g.OH*g.OW)
		pg(&g).maxForward(y, x, 0, 1)
		for oh := 0; oh < g.OH; oh++ {
			for ow := 0; ow < g.OW; ow++ {
				want := pg(&g).windowMax(x, 2*oh, 2*oh+2, 2*ow, 2*ow+2)
				if got := y[oh*g.OW+ow]; math.Float32bits(got) != math.Float32bits(want) {
					t.Fatalf("trial %d: max (%d,%d) = %v, want %v", trial, oh, ow, got, want)
				}
			}
		}
	}
}
