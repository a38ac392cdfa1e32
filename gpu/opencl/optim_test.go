//go:build opencl

package opencl

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/cotrain/cotrain/gpu"
)

// Cooperative training needs more than closeness from the optimizer steps:
// every worker applies the hub's merged gradient to its own copy of the
// weights, and a worker whose weights differ from the hub's by one bit fails
// the per-iteration hash check and downloads the weights again. So the
// OpenCL steps are compared with the CPU backend's bit for bit, over several
// steps (state feeds back), on data whose magnitudes span many binades (so
// that the rounding of products, sqrt and divisions is exercised).

// spread returns n values with random signs and magnitudes from 1e-6 to 1e2,
// and a few exact zeros.
func spread(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		if r.IntN(50) == 0 {
			continue
		}
		x := float32(math.Pow(10, -6+8*r.Float64()))
		if r.IntN(2) == 0 {
			x = -x
		}
		v[i] = x
	}
	return v
}

// checkBits fails unless got and want are the same bits.
func checkBits(t *testing.T, what string, got, want []float32) {
	t.Helper()
	bad := 0
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			if bad < 3 {
				t.Errorf("%s[%d] = %g (%08x), CPU %g (%08x)", what, i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
			}
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%s: %d of %d values differ from the CPU's bits", what, bad, len(want))
	}
}

func TestOpenCLOptimizerStepsBitIdentical(t *testing.T) {
	o := openCLForTest(t)
	cpu := newCPU()
	const n, steps = 1 << 16, 8
	t.Run("sgd", func(t *testing.T) {
		for i, c := range []struct {
			lr, mom, wd float32
			nesterov    bool
		}{{0.1, 0, 0, false}, {0.05, 0.9, 0, false}, {0.05, 0.9, 5e-4, true}, {0.3, 0, 1e-2, false}, {1e-3, 0.99, 1e-4, false}} {
			r := rand.New(rand.NewPCG(11, uint64(i)))
			p, v := newTwin(o, spread(r, n)), newTwin(o, make([]float32, n))
			for s := 0; s < steps; s++ {
				g := newTwin(o, spread(r, n))
				cpu.SGDStep(p.cpu, g.cpu, v.cpu, c.lr, c.mom, c.wd, c.nesterov)
				o.SGDStep(p.cl, g.cl, v.cl, c.lr, c.mom, c.wd, c.nesterov)
			}
			what := fmt.Sprintf("SGD %+v", c)
			checkBits(t, what+" params", download(o, p.cl), p.cpu.(gpu.Host))
			checkBits(t, what+" velocity", download(o, v.cl), v.cpu.(gpu.Host))
		}
	})
	t.Run("adam", func(t *testing.T) {
		for i, c := range []struct{ lr, b1, b2, eps, wd float32 }{
			{1e-3, 0.9, 0.999, 1e-8, 0}, {4e-3, 0.9, 0.999, 1e-8, 1e-2}, {1e-2, 0.8, 0.99, 1e-6, 0},
		} {
			r := rand.New(rand.NewPCG(13, uint64(i)))
			p := newTwin(o, spread(r, n))
			m, v := newTwin(o, make([]float32, n)), newTwin(o, make([]float32, n))
			for s := 1; s <= steps; s++ {
				g := newTwin(o, spread(r, n))
				cpu.AdamStep(p.cpu, g.cpu, m.cpu, v.cpu, c.lr, c.b1, c.b2, c.eps, c.wd, s)
				o.AdamStep(p.cl, g.cl, m.cl, v.cl, c.lr, c.b1, c.b2, c.eps, c.wd, s)
			}
			what := fmt.Sprintf("Adam %+v", c)
			checkBits(t, what+" params", download(o, p.cl), p.cpu.(gpu.Host))
			checkBits(t, what+" m", download(o, m.cl), m.cpu.(gpu.Host))
			checkBits(t, what+" v", download(o, v.cl), v.cpu.(gpu.Host))
		}
	})
}
