package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/gputest"
	"github.com/cotrain/cotrain/gpu/internal/sgemm"
)

// winoCases are geometries that take the Winograd path: padding 0, 1 and 2,
// odd and even output sizes (a last tile row or column half outside),
// non-square planes, channel counts that are not multiples of a tile.
var winoCases = []gpu.ConvGeom{
	{N: 2, C: 16, H: 8, W: 8, K: 16, R: 3, S: 3, PadH: 1, PadW: 1},
	{N: 3, C: 17, H: 9, W: 11, K: 24, R: 3, S: 3, PadH: 1, PadW: 1},
	{N: 1, C: 16, H: 12, W: 10, K: 19, R: 3, S: 3},
	{N: 2, C: 20, H: 7, W: 8, K: 16, R: 3, S: 3, PadH: 2, PadW: 2},
	{N: 1, C: 16, H: 9, W: 12, K: 16, R: 3, S: 3, PadH: 0, PadW: 2},
	{N: 2, C: 16, H: 24, W: 24, K: 16, R: 3, S: 3, PadH: 1, PadW: 1}, // 144 tiles a sample: one at a time
	{N: 5, C: 18, H: 4, W: 5, K: 16, R: 3, S: 3, PadH: 1, PadW: 1},   // the smallest plane, batched
	{N: 5, C: 16, H: 23, W: 24, K: 17, R: 3, S: 3, PadH: 1, PadW: 1}, // 720 tiles: the filter gradient in 5 groups
}

// winoTol bounds Winograd's error relative to Σ|x·w| of an output: its
// transformed terms are sums of up to nine products, so the products'
// rounding reaches a few times im2col's (largest seen over winoCases,
// printed by -v: 2.5e-7).
const winoTol = 1e-6

// TestWinogradAgainstNaive checks the forward and backward data passes on
// the Winograd path against the float64 loops, within winoTol of each
// output's Σ|term|.
func TestWinogradAgainstNaive(t *testing.T) {
	c := NewCPU()
	rng := rand.New(rand.NewPCG(5, 6))
	for _, g := range winoCases {
		if err := g.Setup(); err != nil {
			t.Fatal(err)
		}
		t.Run(fmt.Sprintf("N%dC%d_%dx%d_K%d_p%dx%d", g.N, g.C, g.H, g.W, g.K, g.PadH, g.PadW), func(t *testing.T) {
			if !(&convGeom{g}).winograd() {
				t.Fatalf("%+v does not take the Winograd path", g)
			}
			x, w := gputest.Rand(rng, g.N*g.C*g.H*g.W), gputest.Rand(rng, g.K*g.C*9)
			dy := gputest.Rand(rng, g.N*g.K*g.OH*g.OW)
			want := convNaive(g, x, w, nil, dy)
			ws := gpu.Host(nanSlice(c.ConvWorkspace(g)))
			y, dx, dw := nanSlice(len(want.y)), nanSlice(len(x)), nanSlice(len(w))
			c.ConvForward(g, gpu.Host(y), gpu.Host(x), gpu.Host(w), nil, ws)
			c.ConvBackwardData(g, gpu.Host(dx), gpu.Host(dy), gpu.Host(w), ws)
			c.ConvBackwardFilter(g, gpu.Host(dw), nil, gpu.Host(dy), gpu.Host(x), ws)
			t.Logf("largest error / Σ|term|: forward %.2g, backward data %.2g, filter %.2g",
				worstRel(y, want.y, want.yAbs), worstRel(dx, want.dx, want.dxAbs), worstRel(dw, want.dw, want.dwAbs))
			if err := convClose(y, want.y, want.yAbs, winoTol); err != nil {
				t.Errorf("forward: y%v", err)
			}
			if err := convClose(dx, want.dx, want.dxAbs, winoTol); err != nil {
				t.Errorf("backward data: dx%v", err)
			}
			if err := convClose(dw, want.dw, want.dwAbs, winoTol); err != nil {
				t.Errorf("backward filter: dw%v", err)
			}
		})
	}
}

// worstRel returns the largest |got-want| / max(scale, 1).
func worstRel(got []float32, want, scale []float64) float64 {
	var m float64
	for i := range got {
		m = max(m, math.Abs(float64(got[i])-want[i])/max(scale[i], 1))
	}
	return m
}

// BenchmarkWinograd puts the Winograd path and im2col side by side on
// resnet18's 3×3 stride-1 convolutions at 96×96 (batch 16), forward and
// backward data.
func BenchmarkWinograd(b *testing.B) {
	for _, g := range []gpu.ConvGeom{
		{N: 16, C: 64, H: 24, W: 24, K: 64, R: 3, S: 3, PadH: 1, PadW: 1},
		{N: 16, C: 128, H: 12, W: 12, K: 128, R: 3, S: 3, PadH: 1, PadW: 1},
		{N: 16, C: 256, H: 6, W: 6, K: 256, R: 3, S: 3, PadH: 1, PadW: 1},
		{N: 16, C: 512, H: 3, W: 3, K: 512, R: 3, S: 3, PadH: 1, PadW: 1},
	} {
		if err := g.Setup(); err != nil {
			b.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(1, 1))
		x, w := gputest.Rand(rng, g.N*g.C*g.H*g.W), gputest.Rand(rng, g.K*g.C*9)
		y := make([]float32, g.N*g.K*g.OH*g.OW)
		for _, path := range []string{"im2col", "winograd"} {
			c := NewCPU()
			c.im2colOnly = path == "im2col"
			ws := make([]float32, c.ConvWorkspace(g))
			b.Run(fmt.Sprintf("C%d_%dx%d/%s/forward", g.C, g.H, g.W, path), func(b *testing.B) {
				for b.Loop() {
					c.ConvForward(g, gpu.Host(y), gpu.Host(x), gpu.Host(w), nil, gpu.Host(ws))
				}
			})
			b.Run(fmt.Sprintf("C%d_%dx%d/%s/data", g.C, g.H, g.W, path), func(b *testing.B) {
				for b.Loop() {
					c.ConvBackwardData(g, gpu.Host(x), gpu.Host(y), gpu.Host(w), gpu.Host(ws))
				}
			})
		}
	}
}

// TestWinoTransformsSameBits: winoIn and winoOut, which run every pass over
// a channel's whole plane of tiles through vec's loops, give the bits of
// winoInTiles and winoOutTiles, the loops a row of tiles at a time, on odd
// and even planes, paddings 0 to 2 and a sample's tiles at an offset in a
// wider V.
func TestWinoTransformsSameBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	var th sgemm.Thread
	for _, c := range []struct{ ch, h, w, oh, ow, ph, pw int }{
		{3, 8, 8, 8, 8, 1, 1}, {2, 9, 11, 9, 11, 1, 1}, {4, 12, 10, 10, 8, 0, 0}, {2, 7, 8, 9, 10, 2, 2},
		{1, 9, 12, 7, 12, 0, 1}, {5, 24, 24, 24, 24, 1, 1}, {3, 3, 3, 3, 3, 1, 1}, {2, 6, 6, 6, 6, 1, 1},
	} {
		tr, tc := winoTiles(c.oh, c.ow)
		nt := tr * tc
		ld, off := 3*nt+1, nt+1
		x := gputest.Rand(rng, c.ch*c.h*c.w)
		got, want := gputest.Rand(rng, 16*c.ch*ld), make([]float32, 16*c.ch*ld)
		copy(want, got)
		winoIn(&th, got, ld, off, x, c.ch, c.h, c.w, tr, tc, c.ph, c.pw)
		winoInTiles(&th, want, ld, off, x, c.ch, c.h, c.w, tr, tc, c.ph, c.pw)
		if !slices.Equal(got, want) {
			t.Errorf("%+v: winoIn differs from the per-tile loop", c)
		}
		// The products of k = ch channels: y from got.
		y, yRef := gputest.Rand(rng, c.ch*c.oh*c.ow), make([]float32, c.ch*c.oh*c.ow)
		copy(yRef, y)
		winoOut(&th, y, got, ld, off, c.ch, c.oh, c.ow, tr, tc)
		winoOutTiles(&th, yRef, got, ld, off, c.ch, c.oh, c.ow, tr, tc)
		if !slices.Equal(y, yRef) {
			t.Errorf("%+v: winoOut differs from the per-tile loop", c)
		}
	}
}

// BenchmarkWinoTransforms puts the transforms (one sample of resnet18's
// Winograd layers at 96×96) beside the loops a row of tiles at a time: in the input
// transform, out the output transform.
func BenchmarkWinoTransforms(b *testing.B) {
	var th sgemm.Thread
	rng := rand.New(rand.NewPCG(1, 1))
	for _, c := range []struct{ ch, hw int }{{64, 24}, {128, 12}, {256, 6}} {
		tr, tc := winoTiles(c.hw, c.hw)
		nt := tr * tc
		x, v, y := gputest.Rand(rng, c.ch*c.hw*c.hw), make([]float32, 16*c.ch*nt), make([]float32, c.ch*c.hw*c.hw)
		for _, f := range []struct {
			name string
			in   func(*sgemm.Thread, []float32, int, int, []float32, int, int, int, int, int, int, int)
			out  func(*sgemm.Thread, []float32, []float32, int, int, int, int, int, int, int)
		}{{"tiles", winoInTiles, winoOutTiles}, {"vec", winoIn, winoOut}} {
			b.Run(fmt.Sprintf("C%d_%dx%d/in/%s", c.ch, c.hw, c.hw, f.name), func(b *testing.B) {
				start := cpuTime()
				for b.Loop() {
					f.in(&th, v, nt, 0, x, c.ch, c.hw, c.hw, tr, tc, 1, 1)
				}
				reportCPU(b, start)
			})
			b.Run(fmt.Sprintf("C%d_%dx%d/out/%s", c.ch, c.hw, c.hw, f.name), func(b *testing.B) {
				start := cpuTime()
				for b.Loop() {
					f.out(&th, y, v, nt, 0, c.ch, c.hw, c.hw, tr, tc)
				}
				reportCPU(b, start)
			})
		}
	}
}
