//go:build opencl

package opencl

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/gputest"
)

// TestOpenCLLRN checks LRN and LRNBackward against the CPU backend (which
// gpu/cpu's TestLRN checks against the formula and finite differences),
// in float and half storage.
func TestOpenCLLRN(t *testing.T) { bothStorages(t, testOpenCLLRN) }

func testOpenCLLRN(t *testing.T, o *OpenCL) {
	cpu := newCPU()
	r := rand.New(rand.NewPCG(27, 28))
	for _, g := range []gpu.LRNGeom{
		{N: 2, C: 7, HW: 5, Size: 5, Alpha: 0.5, Beta: 0.75, Bias: 2},
		{N: 2, C: 7, HW: 3, Size: 4, Alpha: 0.3, Beta: 0.75, Bias: 1},
		{N: 1, C: 3, HW: 4, Size: 9, Alpha: 1, Beta: 0.5, Bias: 1},
		{N: 3, C: 16, HW: 49, Size: 5, Alpha: 1e-4, Beta: 0.75, Bias: 1},
	} {
		t.Run(fmt.Sprintf("%+v", g), func(t *testing.T) {
			n := g.N * g.C * g.HW
			x := newTwin(o, gputest.Rand(r, n))
			y := newTwin(o, gputest.Rand(r, n)) // garbage: must be overwritten
			cpu.LRN(g, y.cpu, x.cpu)
			o.LRN(g, y.cl, x.cl)
			y.check(t, o, "forward")
			dy := newTwin(o, gputest.Rand(r, n))
			dx := newTwin(o, gputest.Rand(r, n))
			cpu.LRNBackward(g, dx.cpu, dy.cpu, x.cpu, y.cpu)
			o.LRNBackward(g, dx.cl, dy.cl, x.cl, y.cl)
			dx.check(t, o, "backward")
		})
	}
}
