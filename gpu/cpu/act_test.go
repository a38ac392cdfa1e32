package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/gputest"
)

// TestActivations checks ReLU and ReLU6 and their gradients at the kinks
// (gradient 0 there, as PyTorch), on NaN and ±0, and on a range long enough
// to be split over threads.
func TestActivations(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	runtime.GOMAXPROCS(2)
	nan, negZero := float32(math.NaN()), float32(math.Copysign(0, -1))
	special := []float32{-1, negZero, 0, 0.5, 6, 7, nan, -7}
	rng := rand.New(rand.NewPCG(8, 8))
	x := append(special, gputest.Rand(rng, 100000)...)
	for i := len(special); i < len(x); i++ {
		x[i] *= 5
	}
	dy := gputest.Rand(rng, len(x))
	c := NewCPU()
	for _, a := range []gpu.Act{gpu.ReLU, gpu.ReLU6} {
		y, dx := make([]float32, len(x)), make([]float32, len(x))
		c.Activate(a, gpu.Host(y), gpu.Host(x))
		c.ActivateBackward(a, gpu.Host(dx), gpu.Host(dy), gpu.Host(x))
		for i, v := range x {
			want, pass := max(v, 0), v > 0
			if a == gpu.ReLU6 {
				want, pass = min(max(v, 0), 6), v > 0 && v < 6
			}
			wantDx := float32(0)
			if pass {
				wantDx = dy[i]
			}
			if math.Float32bits(y[i]) != math.Float32bits(want) || math.Float32bits(dx[i]) != math.Float32bits(wantDx) {
				t.Fatalf("%v at x=%v: y %v dx %v, want %v and %v", a, v, y[i], dx[i], want, wantDx)
			}
		}
	}
}

// BenchmarkActivate: lenet5's first ReLU at batch 64 (64×6×28×28).
func BenchmarkActivate(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	x, dy := gpu.Host(gputest.Rand(rng, 64*6*28*28)), gpu.Host(gputest.Rand(rng, 64*6*28*28))
	c := NewCPU()
	y, dx := c.Alloc(x.Len()), c.Alloc(x.Len())
	b.Run("relu/forward", func(b *testing.B) {
		for b.Loop() {
			c.Activate(gpu.ReLU, y, x)
		}
	})
	b.Run("relu/backward", func(b *testing.B) {
		for b.Loop() {
			c.ActivateBackward(gpu.ReLU, dx, dy, x)
		}
	})
}

// refAct is the float64 reference of a's value and derivative at x: its
// operator-table entry's Ref, written from the definitions (PyTorch's
// conventions at the kinks).
func refAct(a gpu.Act, x float64) (y, d float64) {
	op, ok := a.Op()
	if !ok {
		panic("refAct: kind " + a.String())
	}
	return op.Ref(x, float64(a.Alpha), float64(a.Beta))
}

// TestActivationsParam checks every parameterised kind against refAct
// (relative 1e-6, or 1e-6 absolute near zero), at the kinks and on a range
// long enough to be split over threads, with the backward pass given x or
// y as FromOutput says; and that NaN passes the piecewise kinds.
func TestActivationsParam(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	runtime.GOMAXPROCS(2)
	rng := rand.New(rand.NewPCG(9, 9))
	special := []float32{-3.5, -3, -2.5, -1, -0.25, 0, 0.5, 2, 2.5, 3, 3.5, 6, 7, 20, -20}
	x := append(special, gputest.Rand(rng, 70000)...)
	for i := len(special); i < len(x); i++ {
		x[i] *= 5
	}
	dy := gputest.Rand(rng, len(x))
	c := NewCPU()
	for _, a := range gputest.ParamActs() {
		x := x
		if op, _ := a.Op(); op.Positive { // defined for x > 0 only
			x = slices.Clone(x)
			for i, v := range x {
				x[i] = float32(math.Abs(float64(v))) + 0.1
			}
		}
		y, dx := make([]float32, len(x)), make([]float32, len(x))
		c.Activate(a, gpu.Host(y), gpu.Host(x))
		tin := x
		if a.FromOutput() {
			tin = y
		}
		c.ActivateBackward(a, gpu.Host(dx), gpu.Host(dy), gpu.Host(tin))
		for i, v := range x {
			wy, wd := refAct(a, float64(v))
			wdx := wd * float64(dy[i])
			if !near(float64(y[i]), wy) || !near(float64(dx[i]), wdx) {
				t.Fatalf("%v%v at x=%v: y %v dx %v, want %v and %v", a, a, v, y[i], dx[i], wy, wdx)
			}
		}
	}
	nan := float32(math.NaN())
	for _, a := range gputest.ParamActs() {
		y := []float32{0}
		c.Activate(a, gpu.Host(y), gpu.Host([]float32{nan}))
		if !math.IsNaN(float64(y[0])) {
			t.Errorf("%v(NaN) = %v, want NaN", a, y[0])
		}
	}
}

func near(got, want float64) bool {
	return got == want || math.Abs(got-want) <= 1e-6*max(math.Abs(want), 1)
}

// TestActValidate checks that the constructors' invalid parameters are
// refused with the activation named, and valid ones pass.
func TestActValidate(t *testing.T) {
	inf := float32(math.Inf(1))
	nan := float32(math.NaN())
	for _, a := range append(gputest.ParamActs(), gpu.ReLU, gpu.ReLU6, gpu.Clip(-inf, inf), gpu.Clip(2, 2)) {
		if err := a.Validate(); err != nil {
			t.Errorf("%v%+v: %v", a, a, err)
		}
	}
	for _, a := range []gpu.Act{{}, {Kind: 99}, gpu.Clip(2, 1), gpu.Clip(nan, 1), gpu.Clip(inf, inf), gpu.Clip(-inf, -inf), gpu.HardSigmoid(nan, 0),
		gpu.HardSigmoid(1, inf), gpu.LeakyReLU(inf)} {
		if err := a.Validate(); err == nil {
			t.Errorf("%+v: valid, want an error", a)
		}
	}
}

// TestActivationsThreads checks that the parameterised kinds and softmax
// give the same bits on one thread and on several.
func TestActivationsThreads(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	rng := rand.New(rand.NewPCG(10, 10))
	x, dy := gputest.Rand(rng, 3*40000), gputest.Rand(rng, 3*40000)
	run := func(procs int) [][]float32 {
		runtime.GOMAXPROCS(procs)
		c := NewCPU()
		var out [][]float32
		for _, a := range gputest.ParamActs() {
			y, dx := make([]float32, len(x)), make([]float32, len(x))
			c.Activate(a, gpu.Host(y), gpu.Host(x))
			c.ActivateBackward(a, gpu.Host(dx), gpu.Host(dy), gpu.Host(x))
			out = append(out, y, dx)
		}
		y, dx := make([]float32, len(x)), make([]float32, len(x))
		c.Softmax(gpu.Host(y), gpu.Host(x), 40, 30, 100)
		c.SoftmaxBackward(gpu.Host(dx), gpu.Host(dy), gpu.Host(y), 40, 30, 100)
		return append(out, y, dx)
	}
	one, two := run(1), run(4)
	for i := range one {
		for j := range one[i] {
			if math.Float32bits(one[i][j]) != math.Float32bits(two[i][j]) {
				t.Fatalf("output %d element %d: %v on 1 thread, %v on 4", i, j, one[i][j], two[i][j])
			}
		}
	}
}

// refSoftmax is the float64 softmax of x (outer×c×inner) along c and the
// backward pass through the explicit Jacobian, dx_k = sum_j dy_j y_j (δ_jk - y_k).
func refSoftmax(x, dy []float32, outer, c, inner int) (y, dx []float64) {
	y, dx = make([]float64, len(x)), make([]float64, len(x))
	for o := range outer {
		for in := range inner {
			idx := func(k int) int { return (o*c+k)*inner + in }
			var sum float64
			for k := range c {
				sum += math.Exp(float64(x[idx(k)]))
			}
			for k := range c {
				y[idx(k)] = math.Exp(float64(x[idx(k)])) / sum
			}
			for k := range c {
				for j := range c {
					delta := 0.0
					if j == k {
						delta = 1
					}
					dx[idx(k)] += float64(dy[idx(j)]) * y[idx(j)] * (delta - y[idx(k)])
				}
			}
		}
	}
	return y, dx
}

// TestSoftmaxAxis checks Softmax and SoftmaxBackward against refSoftmax over
// channels of an image, a vector and a middle axis, with logits large enough
// to overflow an unshifted exp.
func TestSoftmaxAxis(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 11))
	c := NewCPU()
	for _, g := range [][3]int{{2, 5, 12}, {3, 10, 1}, {4, 1, 3}, {6, 7, 5}} {
		n := g[0] * g[1] * g[2]
		x, dy := gputest.Rand(rng, n), gputest.Rand(rng, n)
		for i := range x {
			x[i] *= 8
		}
		x[0] = 100 // exp(100) overflows float32
		y, dx := make([]float32, n), make([]float32, n)
		c.Softmax(gpu.Host(y), gpu.Host(x), g[0], g[1], g[2])
		c.SoftmaxBackward(gpu.Host(dx), gpu.Host(dy), gpu.Host(y), g[0], g[1], g[2])
		// The reference shifts nothing: float64 holds exp(100).
		wy, wdx := refSoftmax(x, dy, g[0], g[1], g[2])
		for i := range x {
			if !near(float64(y[i]), wy[i]) || math.Abs(float64(dx[i])-wdx[i]) > 1e-6 {
				t.Fatalf("%v element %d: y %v dx %v, want %v and %v", g, i, y[i], dx[i], wy[i], wdx[i])
			}
		}
	}
}

// BenchmarkActivateKinds measures each kind's forward and backward pass on
// MobileNetV3's largest activation at batch 16 (16×16×112×112), every entry
// of the operator table in its order, ReLU (the SIMD kernel) first as the
// reference.
func BenchmarkActivateKinds(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 3))
	n := 16 * 16 * 112 * 112
	x, dy := gpu.Host(gputest.Rand(rng, n)), gpu.Host(gputest.Rand(rng, n))
	c := NewCPU()
	y, dx := c.Alloc(n), c.Alloc(n)
	pos := c.Alloc(n) // |x| + 0.1 for the operators defined for x > 0 only
	for i, v := range x {
		pos.(gpu.Host)[i] = float32(math.Abs(float64(v))) + 0.1
	}
	for _, op := range gpu.UnaryOps() { // every entry of the operator table
		a, x := op.TestActs()[0], x
		if op.Positive {
			x = pos.(gpu.Host)
		}
		b.Run(a.String()+"/forward", func(b *testing.B) {
			b.SetBytes(int64(8 * n))
			for b.Loop() {
				c.Activate(a, y, x)
			}
		})
		b.Run(a.String()+"/backward", func(b *testing.B) {
			b.SetBytes(int64(12 * n))
			for b.Loop() {
				c.ActivateBackward(a, dx, dy, x)
			}
		})
	}
}

// BenchmarkSoftmax: a channel softmax of 16×64×28×28 and a row softmax of
// 256 rows of 1000 classes.
func BenchmarkSoftmax(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 4))
	c := NewCPU()
	for _, g := range [][3]int{{16, 64, 28 * 28}, {256, 1000, 1}} {
		n := g[0] * g[1] * g[2]
		x, dy := gpu.Host(gputest.Rand(rng, n)), gpu.Host(gputest.Rand(rng, n))
		y, dx := c.Alloc(n), c.Alloc(n)
		b.Run(fmt.Sprintf("%dx%dx%d/forward", g[0], g[1], g[2]), func(b *testing.B) {
			for b.Loop() {
				c.Softmax(y, x, g[0], g[1], g[2])
			}
		})
		b.Run(fmt.Sprintf("%dx%dx%d/backward", g[0], g[1], g[2]), func(b *testing.B) {
			for b.Loop() {
				c.SoftmaxBackward(dx, dy, y, g[0], g[1], g[2])
			}
		})
	}
}

// activateNaive and activateBackwardNaive are the piecewise kinds written
// with branches, as the definitions read: the reference the branch-free
// kernels are checked and timed against.
func activateNaive(a gpu.Act, ys, xs []float32) {
	for i, v := range xs {
		switch a.Kind {
		case gpu.KindLeakyReLU:
			if v > 0 {
				ys[i] = v
			} else {
				ys[i] = a.Alpha * v
			}
		case gpu.KindClip:
			switch {
			case v < a.Alpha:
				ys[i] = a.Alpha
			case v > a.Beta:
				ys[i] = a.Beta
			default:
				ys[i] = v
			}
		case gpu.KindHardSigmoid:
			t := float32(a.Alpha*v) + a.Beta
			switch {
			case t < 0:
				ys[i] = 0
			case t > 1:
				ys[i] = 1
			default:
				ys[i] = t
			}
		}
	}
}

func activateBackwardNaive(a gpu.Act, dxs, dys, ts []float32) {
	for i, t := range ts {
		switch a.Kind {
		case gpu.KindLeakyReLU:
			if t > 0 {
				dxs[i] = dys[i]
			} else {
				dxs[i] = dys[i] * a.Alpha
			}
		case gpu.KindClip:
			if t > a.Alpha && t < a.Beta {
				dxs[i] = dys[i]
			} else {
				dxs[i] = 0
			}
		case gpu.KindHardSigmoid:
			if t > 0 && t < 1 {
				dxs[i] = dys[i] * a.Alpha
			} else {
				dxs[i] = 0
			}
		}
	}
}

// branchy are the kinds with a branch-free kernel.
var branchy = []gpu.Act{gpu.LeakyReLU(0.01), gpu.LeakyReLU(-0.3), gpu.Clip(-1, 2), gpu.HardSigmoid(1.0/6, 0.5)}

// TestActivationsBranchFree checks the branch-free kernels against the
// branchy reference element by element (equal values; the sign of a zero
// may differ), NaN included.
func TestActivationsBranchFree(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 12))
	x := append([]float32{float32(math.NaN()), 0, -1, 2, -3, 3}, gputest.Rand(rng, 5000)...)
	for i := range x {
		x[i] *= 4
	}
	dy := gputest.Rand(rng, len(x))
	for _, a := range branchy {
		y, yn := make([]float32, len(x)), make([]float32, len(x))
		dx, dxn := make([]float32, len(x)), make([]float32, len(x))
		activate(a, y, x)
		activateNaive(a, yn, x)
		tin := x
		if a.FromOutput() {
			tin = y
		}
		activateBackward(a, dx, dy, tin)
		activateBackwardNaive(a, dxn, dy, tin)
		for i := range x {
			if !sameValue(y[i], yn[i]) || !sameValue(dx[i], dxn[i]) {
				t.Fatalf("%v%+v at x=%v: y %v dx %v, naive %v and %v", a, a, x[i], y[i], dx[i], yn[i], dxn[i])
			}
		}
	}
}

func sameValue(a, b float32) bool { return a == b || (a != a && b != b) }

// BenchmarkActivateBranchFree puts the branch-free kernels next to the
// branchy reference on 1M random activations (one thread: the loops alone).
func BenchmarkActivateBranchFree(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 5))
	n := 1 << 20
	x, dy := gputest.Rand(rng, n), gputest.Rand(rng, n)
	y, dx := make([]float32, n), make([]float32, n)
	for _, a := range branchy {
		name := fmt.Sprintf("%v(%g,%g)", a, a.Alpha, a.Beta)
		b.Run(name+"/forward/naive", func(b *testing.B) {
			for b.Loop() {
				activateNaive(a, y, x)
			}
		})
		b.Run(name+"/forward/fast", func(b *testing.B) {
			for b.Loop() {
				activate(a, y, x)
			}
		})
		b.Run(name+"/backward/naive", func(b *testing.B) {
			for b.Loop() {
				activateBackwardNaive(a, dx, dy, x)
			}
		})
		b.Run(name+"/backward/fast", func(b *testing.B) {
			for b.Loop() {
				activateBackward(a, dx, dy, x)
			}
		})
	}
}
