package gputest

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/cotrain/cotrain/gpu"
)

// Conformance runs the checks every backend must pass against references
// written from the definitions (not against another backend), as subtests
// of t. newBackend returns the backend to check; it is called once per
// subtest and may return the same backend each time (a device backend's
// tests share one). Each backend's package calls it from its own tests
// (gpu/cpu's TestConformance, gpu/opencl's TestOpenCLConformance), so a
// new backend is held to the same contract by one line.
//
// Exact checks (copies, broadcast operations, dropout masks, the SGD step:
// one rounding each, in the order the contract gives) need float32 storage;
// the sums (ReduceSum, Gemm) and the transcendental activations are checked
// to a relative tolerance.
func Conformance(t *testing.T, newBackend func() gpu.Backend) {
	t.Run("CopyStrided", func(t *testing.T) { checkCopyStrided(t, newBackend()) })
	t.Run("Broadcast", func(t *testing.T) { checkBroadcast(t, newBackend()) })
	t.Run("ReduceSum", func(t *testing.T) { checkReduceSum(t, newBackend()) })
	t.Run("DropoutMask", func(t *testing.T) { checkDropoutMask(t, newBackend()) })
	t.Run("Gemm", func(t *testing.T) { checkGemm(t, newBackend()) })
	t.Run("Activate", func(t *testing.T) { checkActivate(t, newBackend()) })
	t.Run("ActivateTorch", func(t *testing.T) { checkActivateTorch(t, newBackend()) })
	t.Run("SGDStep", func(t *testing.T) { checkSGDStep(t, newBackend()) })
	t.Run("Resample", func(t *testing.T) { checkResample(t, newBackend()) })
	t.Run("PoolTorch", func(t *testing.T) { checkPoolTorch(t, newBackend()) })
}

// upload returns a new buffer of b holding v.
func upload(b gpu.Backend, v []float32) gpu.Buffer {
	buf := b.Alloc(len(v))
	b.Upload(buf, v)
	return buf
}

// download returns the contents of buf.
func download(b gpu.Backend, buf gpu.Buffer) []float32 {
	v := make([]float32, buf.Len())
	b.Download(v, buf)
	return v
}

// Rand returns n values uniform in [-1, 1).
func Rand(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.Float64()*2 - 1)
	}
	return v
}

// exact fails unless got and want hold the same bits.
func exact(t *testing.T, what string, got, want []float32) {
	t.Helper()
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s: element %d is %v, want %v (bit for bit)", what, i, got[i], want[i])
		}
	}
}

// near fails unless every element of got is within tol of want, relative
// to max(1, |want|).
func near(t *testing.T, what string, got []float32, want []float64, tol float64) {
	t.Helper()
	for i := range want {
		if d := math.Abs(float64(got[i]) - want[i]); !(d <= tol*math.Max(1, math.Abs(want[i]))) {
			t.Fatalf("%s: element %d is %v, want %v (tolerance %g)", what, i, got[i], want[i], tol)
		}
	}
}

func checkCopyStrided(t *testing.T, b gpu.Backend) {
	r := rand.New(rand.NewPCG(31, 32))
	for _, tc := range StridedCases() {
		for _, add := range []bool{false, true} {
			src, d0 := Rand(r, tc.NS), Rand(r, tc.ND)
			want := append([]float32(nil), d0...)
			NaiveCopyStrided(want, src, tc.G, add)
			dst := upload(b, d0)
			b.CopyStrided(dst, upload(b, src), tc.G, add)
			exact(t, fmt.Sprintf("%s add=%v", tc.Name, add), download(b, dst), want)
		}
	}
}

// checkBroadcast runs every entry of the binary operator table through
// Broadcast and BroadcastPartial (both operands) on every broadcast shape,
// against the entry's own Go functions over the unmerged index space: bit
// for bit, except Pow, whose device pow and log may differ from Go's
// float64 in the last places (relative 1e-5).
func checkBroadcast(t *testing.T, b gpu.Backend) {
	r := rand.New(rand.NewPCG(2, 16))
	for _, s := range BroadcastShapes() {
		g, na, nb := BroadcastCase(s[0], s[1])
		n := 1
		for _, d := range g.Dims {
			n *= d
		}
		for _, e := range gpu.BinaryOps() {
			av, bv, dy := Rand(r, na), Rand(r, nb), Rand(r, n)
			if e.Positive {
				for i := range av {
					av[i] = float32(math.Abs(float64(av[i]))) + 0.5
				}
			}
			if e.Op == gpu.BinMax || e.Op == gpu.BinMin {
				copy(av[:min(3, na, nb)], bv) // ties: half the gradient each
			}
			want := make([]float32, n)
			NaiveBroadcast(e.Op, want, av, bv, g)
			what := fmt.Sprintf("%v%v %v", s[0], s[1], e.ONNX)
			check := func(what string, got, want []float32) {
				t.Helper()
				if !e.Positive {
					exact(t, what, got, want)
					return
				}
				w := make([]float64, len(want))
				for i, v := range want {
					w[i] = float64(v)
				}
				near(t, what, got, w, 1e-5)
			}
			a, bb, y := upload(b, av), upload(b, bv), b.Alloc(n)
			b.Broadcast(e.Op, y, a, bb, g)
			check(what, download(b, y), want)
			yb, dyb, dst := upload(b, want), upload(b, dy), b.Alloc(n)
			for wrt := range 2 {
				wantD := make([]float32, n)
				NaivePartial(e.Op, wrt, wantD, dy, av, bv, want, g)
				if !e.Reads[wrt].R {
					yb = nil // the partial must not need it
				}
				b.BroadcastPartial(e.Op, wrt, dst, dyb, a, bb, yb, g)
				check(fmt.Sprintf("%s partial %d", what, wrt), download(b, dst), wantD)
				yb = upload(b, want)
			}
		}
	}
}

func checkReduceSum(t *testing.T, b gpu.Backend) {
	r := rand.New(rand.NewPCG(3, 16))
	for _, g := range ReduceShapes() {
		nIn, nOut := 1, 1
		for k := range g.In {
			nIn, nOut = nIn*g.In[k], nOut*g.Out[k]
		}
		src := Rand(r, nIn)
		want := make([]float32, nOut)
		NaiveReduceSum(want, src, g, 0.5)
		dst := b.Alloc(nOut)
		b.ReduceSum(dst, upload(b, src), g, 0.5)
		w64 := make([]float64, nOut)
		for i, v := range want {
			w64[i] = float64(v)
		}
		near(t, fmt.Sprintf("%v to %v", g.In, g.Out), download(b, dst), w64, 1e-5)
	}
}

func checkDropoutMask(t *testing.T, b gpu.Backend) {
	for _, n := range []int{1, 5, 4099} {
		for _, p := range []float32{0, 0.3, 0.9} {
			const seed = 0x9e3779b97f4a7c15
			thr, keep := gpu.DropoutParams(p)
			want := make([]float32, n)
			gpu.DropoutMaskBlocks(want, seed, thr, keep, 0, (n+3)/4)
			m := b.Alloc(n)
			b.DropoutMask(m, seed, p)
			exact(t, fmt.Sprintf("n=%d p=%v", n, p), download(b, m), want)
		}
	}
}

func checkGemm(t *testing.T, b gpu.Backend) {
	r := rand.New(rand.NewPCG(4, 16))
	for _, sz := range [][3]int{{1, 1, 1}, {7, 9, 13}, {64, 48, 200}, {130, 70, 33}} {
		m, n, k := sz[0], sz[1], sz[2]
		for _, tr := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
			av, bv, cv := Rand(r, m*k), Rand(r, k*n), Rand(r, m*n)
			want := make([]float64, m*n)
			for i := range m {
				for j := range n {
					var s float64
					for p := range k {
						x, y := av[i*k+p], bv[p*n+j]
						if tr[0] {
							x = av[p*m+i]
						}
						if tr[1] {
							y = bv[j*k+p]
						}
						s += float64(x) * float64(y)
					}
					want[i*n+j] = 1.5*s + 0.5*float64(cv[i*n+j])
				}
			}
			c := upload(b, cv)
			b.Gemm(tr[0], tr[1], m, n, k, 1.5, upload(b, av), upload(b, bv), 0.5, c)
			near(t, fmt.Sprintf("%dx%dx%d tA=%v tB=%v", m, n, k, tr[0], tr[1]), download(b, c), want, 1e-5*float64(k))
		}
	}
}

// actInputs returns n test inputs for op: uniform in [-8, 8), or in
// (0.1, 8] for an operator defined for x > 0 only.
func actInputs(r *rand.Rand, op gpu.UnaryOp, n int) []float32 {
	xs := Rand(r, n)
	for i := range xs {
		xs[i] *= 8
		if op.Positive {
			xs[i] = float32(math.Abs(float64(xs[i])) + 0.1)
		}
	}
	return xs
}

// checkActivate walks the operator table: for every entry and each of its
// test parameter sets, the backend's forward against the entry's Ref, its
// backward (given x or y as FromOutput says) against Ref's derivative, and
// Ref's derivative against central differences of Ref's value away from
// kinks (where the one-sided differences disagree), so that a wrong
// reference cannot hide a wrong kernel.
func checkActivate(t *testing.T, b gpu.Backend) {
	r := rand.New(rand.NewPCG(5, 16))
	for _, op := range gpu.UnaryOps() {
		xs := actInputs(r, op, 1000)
		dy := Rand(r, len(xs))
		for _, a := range op.TestActs() {
			what := fmt.Sprintf("%v(%g, %g)", a, a.Alpha, a.Beta)
			al, be := float64(a.Alpha), float64(a.Beta)
			want, wantDx := make([]float64, len(xs)), make([]float64, len(xs))
			for i, x := range xs {
				y, d := op.Ref(float64(x), al, be)
				want[i], wantDx[i] = y, d*float64(dy[i])
				if fd, ok := centralDiff(op, float64(x), al, be); ok && !(math.Abs(fd-d) <= 1e-4*math.Max(1, math.Abs(d))) {
					t.Fatalf("%s: reference derivative %v at x=%v, central difference %v", what, d, x, fd)
				}
			}
			y := b.Alloc(len(xs))
			b.Activate(a, y, upload(b, xs))
			ys := download(b, y)
			near(t, what, ys, want, 1e-6)
			tin := xs
			if a.FromOutput() {
				tin = ys
			}
			dx := b.Alloc(len(xs))
			b.ActivateBackward(a, dx, upload(b, dy), upload(b, tin))
			near(t, what+" backward", download(b, dx), wantDx, 1e-5)
		}
	}
}

// torchUnary is one entry of testdata/unary_torch.json (scripts/onnx_acts.py
// unary): an operator of the table with its parameters, inputs x, an output
// gradient dy, and PyTorch 1.13's float32 output y and input gradient dx.
type torchUnary struct {
	Kind         string
	Params       []float32
	X, DY, Y, DX []float64
}

// checkActivateTorch checks every entry of the operator table against
// PyTorch's values and autograd gradients (testdata/unary_torch.json), to
// 1e-4 relative to max(1, |PyTorch's|); an entry without a golden fails.
func checkActivateTorch(t *testing.T, b gpu.Backend) {
	_, file, _, _ := runtime.Caller(0)
	raw, err := os.ReadFile(filepath.Join(filepath.Dir(file), "testdata", "unary_torch.json"))
	if err != nil {
		t.Fatal(err)
	}
	var goldens []torchUnary
	if err := json.Unmarshal(raw, &goldens); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, g := range goldens {
		op, ok := gpu.UnaryOpNamed(g.Kind)
		if !ok {
			t.Fatalf("golden of %s: no such entry in the table", g.Kind)
		}
		seen[g.Kind] = true
		a := op.Act(g.Params...)
		what := fmt.Sprintf("%v%v against PyTorch", a, g.Params)
		xs, dy := make([]float32, len(g.X)), make([]float32, len(g.X))
		for i := range xs {
			xs[i], dy[i] = float32(g.X[i]), float32(g.DY[i])
		}
		y := b.Alloc(len(xs))
		b.Activate(a, y, upload(b, xs))
		ys := download(b, y)
		near(t, what, ys, g.Y, 1e-4)
		tin := xs
		if a.FromOutput() {
			tin = ys
		}
		dx := b.Alloc(len(xs))
		b.ActivateBackward(a, dx, upload(b, dy), upload(b, tin))
		dxs := download(b, dx)
		near(t, what+" backward", dxs, g.DX, 1e-4)
		t.Logf("%s: max error %.2g forward, %.2g backward", what, maxErr(ys, g.Y), maxErr(dxs, g.DX))
	}
	for _, op := range gpu.UnaryOps() {
		if !seen[op.Name] {
			t.Errorf("%s: no PyTorch golden (add it to scripts/onnx_acts.py's UNARY)", op.Name)
		}
	}
}

// maxErr is the largest |got-want| / max(1, |want|).
func maxErr(got []float32, want []float64) float64 {
	var e float64
	for i, w := range want {
		if d := math.Abs(float64(got[i])-w) / math.Max(1, math.Abs(w)); d > e || math.IsNaN(d) {
			e = d
		}
	}
	return e
}

// centralDiff is the derivative of op's Ref at x by central differences,
// or false where the one-sided differences disagree (a kink) or x is too
// near 0 (where Reciprocal's and Sqrt's derivatives grow without bound).
func centralDiff(op gpu.UnaryOp, x, al, be float64) (float64, bool) {
	const h = 1e-5
	if math.Abs(x) < 0.1 {
		return 0, false
	}
	f := func(v float64) float64 { y, _ := op.Ref(v, al, be); return y }
	y0, yl, yr := f(x), f(x-h), f(x+h)
	left, right := (y0-yl)/h, (yr-y0)/h
	if math.Abs(left-right) > 1e-3*math.Max(1, math.Abs(left)) {
		return 0, false
	}
	return (yr - yl) / (2 * h), true
}

func checkSGDStep(t *testing.T, b gpu.Backend) {
	r := rand.New(rand.NewPCG(6, 16))
	const n = 1000
	for _, c := range []struct {
		lr, mom, wd float32
		nesterov    bool
	}{{0.1, 0, 0, false}, {0.05, 0.9, 1e-4, false}, {0.01, 0.9, 5e-4, true}} {
		p, g, v := Rand(r, n), Rand(r, n), Rand(r, n)
		wp, wv := append([]float32(nil), p...), append([]float32(nil), v...)
		for i := range wp {
			// torch.optim.SGD, dampening 0, one float32 rounding per operation.
			d := g[i] + float32(c.wd*wp[i])
			if c.mom > 0 {
				wv[i] = float32(c.mom*wv[i]) + d
				if c.nesterov {
					d += float32(c.mom * wv[i])
				} else {
					d = wv[i]
				}
			}
			wp[i] -= float32(c.lr * d)
		}
		pb, vb := upload(b, p), upload(b, v)
		b.SGDStep(pb, upload(b, g), vb, c.lr, c.mom, c.wd, c.nesterov)
		what := fmt.Sprintf("lr=%v momentum=%v wd=%v nesterov=%v", c.lr, c.mom, c.wd, c.nesterov)
		exact(t, what+" p", download(b, pb), wp)
		if c.mom > 0 {
			exact(t, what+" v", download(b, vb), wv)
		}
	}
}

// forIndex calls f with every index of dims in row-major order.
func forIndex(dims []int, f func(idx []int)) {
	total := 1
	for _, d := range dims {
		total *= d
	}
	idx := make([]int, len(dims))
	for i := range total {
		r := i
		for k := len(dims) - 1; k >= 0; k-- {
			idx[k] = r % dims[k]
			r /= dims[k]
		}
		f(idx)
	}
}

func dot(idx, strides []int) int {
	o := 0
	for k := range idx {
		o += idx[k] * strides[k]
	}
	return o
}

// NaiveCopyStrided is CopyStrided over the unmerged index space.
func NaiveCopyStrided(d, s []float32, g gpu.StridedGeom, add bool) {
	forIndex(g.Dims, func(idx []int) {
		o := g.DstOff + dot(idx, g.Dst)
		v := s[g.SrcOff+dot(idx, g.Src)]
		if add {
			v += d[o]
		}
		d[o] = v
	})
}

// NaiveBroadcast is Broadcast over the unmerged index space, by the
// operator table's Forward.
func NaiveBroadcast(op gpu.BinOp, d, a, b []float32, g gpu.BroadcastGeom) {
	e, _ := op.Entry()
	i := 0
	forIndex(g.Dims, func(idx []int) {
		d[i] = e.Forward(a[dot(idx, g.A)], b[dot(idx, g.B)])
		i++
	})
}

// NaivePartial is BroadcastPartial over the unmerged index space, by the
// operator table's Partial; y is the output.
func NaivePartial(op gpu.BinOp, wrt int, d, dy, a, b, y []float32, g gpu.BroadcastGeom) {
	e, _ := op.Entry()
	i := 0
	forIndex(g.Dims, func(idx []int) {
		d[i] = e.Partial(wrt, dy[i], a[dot(idx, g.A)], b[dot(idx, g.B)], y[i])
		i++
	})
}

// NaiveReduceSum sums in the documented order: each output's source
// elements in row-major order of the reduced axes, in float32.
func NaiveReduceSum(d, s []float32, g gpu.ReduceGeom, alpha float32) {
	src, dst := gpu.ContiguousStrides(g.In), gpu.ContiguousStrides(g.Out)
	var red []int
	for k := range g.In {
		red = append(red, g.In[k]/g.Out[k])
	}
	forIndex(g.Out, func(o []int) {
		var acc float32
		forIndex(red, func(r []int) {
			full := make([]int, len(o))
			for k := range o {
				full[k] = o[k] + r[k] // one of them is 0 on every axis
			}
			acc += s[dot(full, src)]
		})
		d[dot(o, dst)] = alpha * acc
	})
}
