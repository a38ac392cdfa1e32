//go:build opencl

package opencl

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/gputest"
)

// TestActParamFastPaths holds ReLU's and ReLU6's fast kernels (act, act4,
// act_backward, act_backward4 in elementwise.cl) to the semantics of their
// operator-table entries: the generated act_param and act_param_backward
// with the same kind give the same bits, on ±0 and the kinks too, and a NaN
// for a NaN (its payload may differ: gputest.SameValues; on an H200 the two
// kernels' NaNs did).
func TestActParamFastPaths(t *testing.T) {
	o := openCLForTest(t)
	r := rand.New(rand.NewPCG(41, 42))
	nan, negZero := float32(math.NaN()), float32(math.Copysign(0, -1))
	xs := append([]float32{-1, negZero, 0, 0.5, 6, 7, nan, -7, 5.999}, gputest.Rand(r, 4087)...)
	for i := 9; i < len(xs); i++ {
		xs[i] *= 8
	}
	dys := gputest.Rand(r, len(xs))
	for _, n := range []int{len(xs), len(xs) - 1} { // act4 and act
		for _, a := range []gpu.Act{gpu.ReLU, gpu.ReLU6} {
			x, dy := o.Alloc(n), o.Alloc(n)
			o.Upload(x, xs[:n])
			o.Upload(dy, dys[:n])
			fast, gen := o.Alloc(n), o.Alloc(n)
			o.Activate(a, fast, x)
			xb, gb := o.buf(x), o.buf(gen)
			o.run1(kActParam, n, int(a.Kind), a.Alpha, a.Beta, gb.m, gb.off, xb.m, xb.off, n)
			if f, g := download(o, fast), download(o, gen); !gputest.SameValues(f, g) {
				t.Fatalf("%v forward, %d elements: the fast kernel and the table's differ", a, n)
			}
			o.ActivateBackward(a, fast, dy, x)
			dyb := o.buf(dy)
			o.run1(kActParamBackward, n, int(a.Kind), a.Alpha, a.Beta, gb.m, gb.off, dyb.m, dyb.off, xb.m, xb.off, n)
			if f, g := download(o, fast), download(o, gen); !gputest.SameValues(f, g) {
				t.Fatalf("%v backward, %d elements: the fast kernel and the table's differ", a, n)
			}
		}
	}
}
