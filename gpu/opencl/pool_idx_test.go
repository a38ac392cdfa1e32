//go:build opencl

package opencl

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/gputest"
)

// TestOpenCLMaxPoolIndexer: MaxPoolForwardIdx gives MaxPoolForward's bits
// and MaxPoolBackwardIdx, from its positions, MaxPoolBackward's, on every
// pooling geometry of TestOpenCLPool, with ties (values on a coarse grid),
// NaNs, ±0 and -Inf in the windows, for the batch the buffer was asked for
// and a smaller one, in float and half storage; the backward is one launch
// where MaxPoolBackward is two.
func TestOpenCLMaxPoolIndexer(t *testing.T) { bothStorages(t, testOpenCLMaxPoolIndexer) }

func testOpenCLMaxPoolIndexer(t *testing.T, o *OpenCL) {
	r := rand.New(rand.NewPCG(61, 62))
	nan, inf, negZero := float32(math.NaN()), float32(math.Inf(-1)), float32(math.Copysign(0, -1))
	for gi, base := range clPoolGeoms {
		g := base
		g.N++ // room for a batch one larger than the smaller one run below
		if err := g.Setup(); err != nil {
			t.Fatal(err)
		}
		idx := o.MaxPoolIndices(g)
		if idx == nil || idx.Len() != g.N*g.C*g.OH*g.OW {
			t.Fatalf("%+v: MaxPoolIndices gave %v, want %d positions", g, idx, g.N*g.C*g.OH*g.OW)
		}
		for _, n := range []int{g.N, g.N - 1} {
			for _, special := range []bool{false, true} {
				name := fmt.Sprintf("%d/N=%d/special=%v", gi, n, special)
				sg := g
				sg.N = n
				xv := gputest.Rand(r, n*g.C*g.H*g.W)
				for i := range xv {
					xv[i] = float32(math.Round(float64(xv[i]) * 3)) // ties
					if special {
						switch r.IntN(8) {
						case 0:
							xv[i] = nan
						case 1:
							xv[i] = negZero
						case 2:
							xv[i] = inf
						}
					}
				}
				x, dy := o.Alloc(len(xv)), o.Alloc(n*g.C*g.OH*g.OW)
				o.Upload(x, xv)
				o.Upload(dy, gputest.Rand(r, dy.Len()))
				y, yIdx := o.Alloc(dy.Len()), o.Alloc(dy.Len())
				dx, dxIdx := o.Alloc(len(xv)), o.Alloc(len(xv))
				o.MaxPoolForward(sg, y, x)
				o.MaxPoolForwardIdx(sg, yIdx, idx, x)
				sameBitsCL(t, name+": y", download(o, yIdx), download(o, y))
				before := o.ctx.launches
				o.MaxPoolBackward(sg, dx, dy, x)
				plain := o.ctx.launches - before
				before = o.ctx.launches
				o.MaxPoolBackwardIdx(sg, dxIdx, dy, idx)
				withIdx := o.ctx.launches - before
				sameBitsCL(t, name+": dx", download(o, dxIdx), download(o, dx))
				if plain != 2 || withIdx != 1 {
					t.Errorf("%s: backward %d launches with the positions, %d without: want 1 and 2", name, withIdx, plain)
				}
			}
		}
	}
}

// TestOpenCLMaxPoolIndicesRefused: the positions are refused where values
// are expected and values where positions are, and a buffer for a smaller
// batch is refused, each with a panic naming what is wrong.
func TestOpenCLMaxPoolIndicesRefused(t *testing.T) {
	o := openCLForTest(t)
	g := gpu.PoolGeom{N: 2, C: 3, H: 8, W: 8, KH: 2, KW: 2}
	if err := g.Setup(); err != nil {
		t.Fatal(err)
	}
	idx := o.MaxPoolIndices(g)
	x, y := o.Alloc(g.N*g.C*g.H*g.W), o.Alloc(g.N*g.C*g.OH*g.OW)
	small := g
	small.N = 1
	for _, c := range []struct {
		name, want string
		f          func()
	}{
		{"download", "buffer of another backend", func() { o.Download(make([]float32, idx.Len()), idx) }},
		{"values as positions", "not a buffer of this backend's MaxPoolIndices", func() { o.MaxPoolForwardIdx(g, y, y, x) }},
		{"positions for a larger batch", "positions for", func() {
			g2 := g
			g2.N = 3
			o.MaxPoolBackwardIdx(g2, o.Alloc(3*g.C*g.H*g.W), o.Alloc(3*g.C*g.OH*g.OW), o.MaxPoolIndices(small))
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				msg := fmt.Sprint(recover())
				if !strings.Contains(msg, c.want) {
					t.Errorf("panic %q, want one containing %q", msg, c.want)
				}
			}()
			c.f()
		})
	}
}

// BenchmarkOpenCLMaxPoolIdx times AlexNet's three max pools' training
// forward and backward (batch COTRAIN_BENCH_BATCH, 32 by default) both
// ways in one run: MaxPoolForward then MaxPoolBackward (argmax, then the
// gather), against MaxPoolForwardIdx then MaxPoolBackwardIdx (the gather
// alone).
func BenchmarkOpenCLMaxPoolIdx(b *testing.B) {
	o := openCLForTest(b)
	nb := benchBatch(b)
	for _, c := range alexPools {
		g, x, dx, dy := poolBench(b, o, c.g, nb)
		y := o.Alloc(dy.Len())
		idx := o.MaxPoolIndices(g)
		b.Run(c.name+"/argmax", func(b *testing.B) {
			benchKernel(b, o, 0, func() {
				o.MaxPoolForward(g, y, x)
				o.MaxPoolBackward(g, dx, dy, x)
			})
		})
		b.Run(c.name+"/positions", func(b *testing.B) {
			benchKernel(b, o, 0, func() {
				o.MaxPoolForwardIdx(g, y, idx, x)
				o.MaxPoolBackwardIdx(g, dx, dy, idx)
			})
		})
	}
}
