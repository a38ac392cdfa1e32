//go:build opencl

package solver_test

import (
	"fmt"
	"testing"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/opencl"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/solver"
)

// countingIndexer is an OpenCL backend that counts its gpu.MaxPoolIndexer
// calls; with refuse, MaxPoolIndices grants no buffer, so max pooling
// finds the windows' maxima again in the backward, as before positions
// were kept. Every other interface of the backend stays.
type countingIndexer struct {
	*opencl.OpenCL
	refuse                bool
	asked, fwdIdx, bwdIdx int
}

func (c *countingIndexer) MaxPoolIndices(g gpu.PoolGeom) gpu.Buffer {
	c.asked++
	if c.refuse {
		return nil
	}
	return c.OpenCL.MaxPoolIndices(g)
}

func (c *countingIndexer) MaxPoolForwardIdx(g gpu.PoolGeom, y, idx, x gpu.Buffer) {
	c.fwdIdx++
	c.OpenCL.MaxPoolForwardIdx(g, y, idx, x)
}

func (c *countingIndexer) MaxPoolBackwardIdx(g gpu.PoolGeom, dx, dy, idx gpu.Buffer) {
	c.bwdIdx++
	c.OpenCL.MaxPoolBackwardIdx(g, dx, dy, idx)
}

// poolNodes are two convolutions, each followed by an overlapping 3×3/2
// max pool (AlexNet's), the second padded.
func poolNodes() []solver.Node {
	return []solver.Node{
		{Layer: solver.NewConv2D("c1", solver.ConvConfig{Out: 8, KH: 3, PadH: 1, PadW: 1})},
		{Layer: solver.NewReLU("r1")},
		{Layer: solver.NewMaxPool2D("p1", solver.PoolConfig{KH: 3, StrideH: 2})},
		{Layer: solver.NewConv2D("c2", solver.ConvConfig{Out: 8, KH: 3, PadH: 1, PadW: 1})},
		{Layer: solver.NewReLU("r2")},
		{Layer: solver.NewMaxPool2D("p2", solver.PoolConfig{KH: 3, StrideH: 2, PadH: 1, PadW: 1})},
		{Layer: solver.NewFlatten("flat")},
		{Layer: solver.NewLinear("fc", 10)},
	}
}

// Keeping max pooling's window positions from the training forward for the
// backward changes no bit of the gradients, weights, state or logits
// (steps at batch 6 with evaluations at batch 8 in between, which must not
// leave stale positions, then a gradient at batch 4, smaller than the
// buffers), partly frozen or not; and a steady training step then runs no
// maxpool_argmax, where it runs one per pool without positions.
func TestMaxPoolIndicesOnOpenCL(t *testing.T) {
	o := openCLForSolverTest(t, opencl.WinogradOff)
	defer o.Close()
	build := map[string]func(gpu.Backend) (*solver.Net, error){
		"lenet5": func(b gpu.Backend) (*solver.Net, error) { return models.Build(b, "lenet5", models.Config{}) },
		"pools": func(b gpu.Backend) (*solver.Net, error) {
			return solver.NewNet(b, solver.Shape{C: 3, H: 23, W: 23}, poolNodes())
		},
	}
	for _, model := range []string{"lenet5", "pools"} {
		for _, last := range []int{-1, 1, 4} { // -1: all layers learn; 1: no pool gets an input gradient
			var runs [2][][]float32
			var with *countingIndexer
			for k, refuse := range []bool{false, true} {
				b := &countingIndexer{OpenCL: o, refuse: refuse}
				runs[k] = frozenFingerprint(t, build[model], b, last)
				if !refuse {
					with = b
				} else if b.fwdIdx != 0 || b.bwdIdx != 0 {
					t.Errorf("%s (last %d): positions refused, yet %d forwards and %d backwards used them", model, last, b.fwdIdx, b.bwdIdx)
				}
			}
			sameFingerprint(t, fmt.Sprintf("%s (last %d)", model, last), runs[0], runs[1], "with kept positions", "without")
			// stepsFingerprint: 3 steps at batch 6, then a gradient at
			// batch 4. Each pool whose input gradient is needed asks at
			// its first Backward (batch 6) and uses its positions from
			// the second step on, 3 times: both pools when all layers
			// learn, none when only the last one does (no Backward reads
			// positions, so no Forward writes them), at least the last
			// pool with the last 4.
			asked := map[int]int{-1: 2, 1: 0}[last]
			if last == 4 {
				asked = max(with.asked, 1)
			}
			if with.asked != asked || with.fwdIdx != 3*asked || with.bwdIdx != 3*asked {
				t.Errorf("%s (last %d): %d asked, %d forwards and %d backwards with positions, want %d, %d, %d",
					model, last, with.asked, with.fwdIdx, with.bwdIdx, asked, 3*asked, 3*asked)
			}
		}
	}
	// maxpool_argmax launches of a steady training step: none with
	// positions, one per pool without.
	for k, refuse := range []bool{false, true} {
		b := &countingIndexer{OpenCL: o, refuse: refuse}
		n, err := build["pools"](b)
		if err != nil {
			t.Fatal(err)
		}
		argmax := steadyStepLaunches(t, o, b, n, "maxpool_argmax")
		if want := 2 * k; argmax != want {
			t.Errorf("positions refused %v: %d maxpool_argmax launches in a training step, want %d", refuse, argmax, want)
		}
	}
}
