package cpu

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/gputest"
)

// colBatchCases take the batched small-plane path: several groups (N·OH·OW
// over colBatchCols, unevenly split), one group, the 1×1 path (stride 1 and
// 2), padding, the largest plane that is batched.
var colBatchCases = []gpu.ConvGeom{
	{N: 20, C: 5, H: 6, W: 6, K: 7, R: 3, S: 3, PadH: 1, PadW: 1},                         // 720 columns: 2 groups
	{N: 17, C: 3, H: 5, W: 5, K: 4, R: 3, S: 3, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1}, // 3×3 plane: 1 group
	{N: 3, C: 6, H: 3, W: 3, K: 5, R: 1, S: 1},
	{N: 41, C: 2, H: 8, W: 8, K: 3, R: 1, S: 1},                          // 2624 columns: 6 groups
	{N: 9, C: 4, H: 16, W: 16, K: 3, R: 1, S: 1, StrideH: 2, StrideW: 2}, // 8×8 plane
	{N: 5, C: 3, H: 4, W: 7, K: 2, R: 2, S: 3, PadH: 1},
}

// TestColBatchAgainstNaive checks the batched path's three passes against
// the definition.
func TestColBatchAgainstNaive(t *testing.T) {
	for _, g := range colBatchCases {
		if err := g.Setup(); err != nil {
			t.Fatal(err)
		}
		if !cg(&g).colBatched() {
			t.Fatalf("%+v does not take the batched path", g)
		}
	}
	convAgainstNaive(t, NewCPU(), colBatchCases)
}

// TestColBatchSameBitsAsPerSample: forward and backward data on the batched
// path compute every output with the per-sample path's arithmetic, so their
// bits match it; the filter gradient's sums are grouped differently (only
// the naive test bounds it).
func TestColBatchSameBitsAsPerSample(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, g := range colBatchCases {
		if err := g.Setup(); err != nil {
			t.Fatal(err)
		}
		t.Run(fmt.Sprintf("N%dC%d_%dx%d_K%d_%dx%d", g.N, g.C, g.H, g.W, g.K, g.R, g.S), func(t *testing.T) {
			x, w := gputest.Rand(rng, g.N*g.C*g.H*g.W), gputest.Rand(rng, g.K*g.C*g.R*g.S)
			bias, dy := gputest.Rand(rng, g.K), gputest.Rand(rng, g.N*g.K*g.OH*g.OW)
			var ys, dxs [2][]float32
			for i, off := range []bool{false, true} {
				c := NewCPU()
				c.colOff = off
				ws := gpu.Host(make([]float32, c.ConvWorkspace(g)))
				ys[i], dxs[i] = make([]float32, len(dy)), make([]float32, len(x))
				c.ConvForward(g, gpu.Host(ys[i]), gpu.Host(x), gpu.Host(w), gpu.Host(bias), ws)
				c.ConvBackwardData(g, gpu.Host(dxs[i]), gpu.Host(dy), gpu.Host(w), ws)
			}
			if !slices.Equal(ys[0], ys[1]) {
				t.Error("forward: batched and per-sample y differ")
			}
			if !slices.Equal(dxs[0], dxs[1]) {
				t.Error("backward data: batched and per-sample dx differ")
			}
		})
	}
}
