package solver

// A finite-difference gradient checker for layers and networks, shared by
// every layer test of this package.
//
// Use:
//
//	checkGrads(t, NewConv2D("c", ConvConfig{Out: 3, KH: 3}), Shape{2, 5, 5}, 2, 1e-2)
//	checkGradsMulti(t, addLayer, []Shape{s, s}, 2, 1e-2) // layers of several inputs
//	checkNetGrads(t, net, 2, 1e-2)                       // parameter gradients of a Net
//
// or, for a non-default step, input or element budget, a gradCheck value
// (gradCheck{Eps: 1e-3, Tol: 1e-2}.layer(...)) whose methods return the
// mismatches instead of failing a test.
//
// The scalar checked is L = Σ r·out with fixed random weights r, so dL/dout = r
// is what Backward receives. Each input and parameter element is moved by
// ±Eps in float32 and the central difference (L+ - L-)/(x+ - x-) is compared
// with the analytic gradient: a mismatch is |a-n| > Tol·max(|a|, |n|, Floor).
// L is summed in float64 so that the only float32 noise is the layer's own.
//
// Before Forward and Backward the checker fills out, din and the parameter
// gradients with a sentinel, so a layer that adds into them instead of setting
// them fails. Pass.Rand is reseeded before every Forward, so a random layer
// (dropout) draws the same mask in each evaluation.
//
// Inputs default to distinct values on a 0.05 grid offset by 0.025 (shuffled),
// so no two values tie within 2·Eps and none lies within Eps of 0: max pooling
// and ReLU-like kinks are not crossed by a perturbation of the inputs.

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/cpu"
)

// gradCheck configures a finite-difference gradient check. Zero fields take
// the defaults named on each.
type gradCheck struct {
	Eps   float64 // central-difference step; default 1e-2
	Tol   float64 // relative tolerance; default 1e-2
	Floor float64 // magnitude under which the comparison becomes absolute; default 1e-3
	Seed  uint64  // seeds inputs, parameters, loss weights and Pass.Rand; default 1
	Max   int     // checks at most this many elements per tensor, evenly spread (0: all)
	// Input fills the inputs; default: distinct shuffled values on a 0.05 grid.
	Input func(dst []float32, r *rand.Rand)
}

// gradMismatch is one element whose analytic and numeric gradients disagree.
type gradMismatch struct {
	Tensor            string // "input0", "weight", "conv1.bias", ...
	Index             int
	Analytic, Numeric float64
	RelErr            float64
}

func (m gradMismatch) String() string {
	return fmt.Sprintf("%s[%d]: analytic %.6g, numeric %.6g (rel err %.3g)", m.Tensor, m.Index, m.Analytic, m.Numeric, m.RelErr)
}

func (c gradCheck) withDefaults() gradCheck {
	if c.Eps == 0 {
		c.Eps = 1e-2
	}
	if c.Tol == 0 {
		c.Tol = 1e-2
	}
	if c.Floor == 0 {
		c.Floor = 1e-3
	}
	if c.Seed == 0 {
		c.Seed = 1
	}
	if c.Input == nil {
		c.Input = distinctValues
	}
	return c
}

// distinctValues fills dst with a shuffle of (i - n/2 + 0.5)·0.05.
func distinctValues(dst []float32, r *rand.Rand) {
	n := len(dst)
	for i, j := range r.Perm(n) {
		dst[i] = float32((float64(j) - float64(n/2) + 0.5) * 0.05)
	}
}

func uniform(dst []float32, r *rand.Rand) {
	for i := range dst {
		dst[i] = float32(2*r.Float64() - 1)
	}
}

// dot is Σ a·b in float64.
func dot(a, b []float32) float64 {
	var s float64
	for i := range a {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}

// indices lists the elements of a tensor of n to check.
func (c gradCheck) indices(n int) []int {
	step := 1
	if c.Max > 0 && n > c.Max {
		step = (n + c.Max - 1) / c.Max
	}
	var idx []int
	for i := 0; i < n; i += step {
		idx = append(idx, i)
	}
	return idx
}

// compare checks the analytic gradient of one tensor against central
// differences of loss, perturbing vals (which upload must push to the layer).
func (c gradCheck) compare(name string, vals, analytic []float32, upload func(), loss func() float64) []gradMismatch {
	var bad []gradMismatch
	for _, i := range c.indices(len(vals)) {
		orig := vals[i]
		plus, minus := float32(float64(orig)+c.Eps), float32(float64(orig)-c.Eps)
		vals[i] = plus
		upload()
		lp := loss()
		vals[i] = minus
		upload()
		lm := loss()
		vals[i] = orig
		upload()
		num := (lp - lm) / (float64(plus) - float64(minus))
		a := float64(analytic[i])
		scale := max(math.Abs(a), math.Abs(num), c.Floor)
		if rel := math.Abs(a-num) / scale; !(rel <= c.Tol) {
			bad = append(bad, gradMismatch{name, i, a, num, rel})
		}
	}
	return bad
}

// sentinel is written into every destination before a call, to catch kernels
// that add into or skip their output.
const sentinel = 1e3

// layer checks the input and parameter gradients of l, set up standalone on
// the CPU backend with inputs of the given per-sample shapes.
func (c gradCheck) layer(l Layer, ins []Shape, batch int) ([]gradMismatch, error) {
	c = c.withDefaults()
	b := cpu.NewCPU()
	outShape, err := l.Setup(ins)
	if err != nil {
		return nil, err
	}
	r := rand.New(rand.NewPCG(c.Seed, 0x9e3779b97f4a7c15))
	pspecs, sspecs := l.Params(), l.State()
	params := make([][]float32, len(pspecs))
	var pb, gb, sb []gpu.Buffer
	for i, s := range pspecs {
		params[i] = make([]float32, s.Size())
		uniform(params[i], r)
		p := b.Alloc(s.Size())
		b.Upload(p, params[i])
		pb, gb = append(pb, p), append(gb, b.Alloc(s.Size()))
	}
	for _, s := range sspecs {
		st := make([]float32, s.Size())
		fill(st, s, r)
		buf := b.Alloc(s.Size())
		b.Upload(buf, st)
		sb = append(sb, buf)
	}
	l.Bind(b, pb, gb, sb)
	l.Resize(b, batch)
	pass := &Pass{B: b, N: batch, Train: true, WS: b.Alloc(max(l.Workspace(batch), 1))}

	xs := make([][]float32, len(ins))
	xb := make([]gpu.Buffer, len(ins))
	dxb := make([]gpu.Buffer, len(ins))
	for i, s := range ins {
		xs[i] = make([]float32, batch*s.Size())
		c.Input(xs[i], r)
		xb[i], dxb[i] = b.Alloc(len(xs[i])), b.Alloc(len(xs[i]))
		b.Upload(xb[i], xs[i])
	}
	wts := make([]float32, batch*outShape.Size())
	uniform(wts, r)
	out, dout := b.Alloc(len(wts)), b.Alloc(len(wts))
	b.Upload(dout, wts)
	outHost := make([]float32, len(wts))
	loss := func() float64 {
		pass.Rand = rand.New(rand.NewPCG(c.Seed, 7))
		b.Fill(out, sentinel)
		l.Forward(pass, out, xb)
		b.Download(outHost, out)
		return dot(outHost, wts)
	}

	loss()
	for i := range dxb {
		b.Fill(dxb[i], sentinel)
	}
	for _, g := range gb {
		b.Fill(g, sentinel)
	}
	l.Backward(pass, dxb, dout, xb, out, true)

	var bad []gradMismatch
	for i := range xs {
		dx := make([]float32, len(xs[i]))
		b.Download(dx, dxb[i])
		bad = append(bad, c.compare(fmt.Sprintf("input%d", i), xs[i], dx, func() { b.Upload(xb[i], xs[i]) }, loss)...)
	}
	for i, s := range pspecs {
		g := make([]float32, s.Size())
		b.Download(g, gb[i])
		bad = append(bad, c.compare(s.Name, params[i], g, func() { b.Upload(pb[i], params[i]) }, loss)...)
	}
	return bad, nil
}

// net checks the parameter gradients of n (its trainable ranges only; the
// input gradient is not exposed by Net). The parameters are redrawn.
func (c gradCheck) net(n *Net, batch int) ([]gradMismatch, error) {
	c = c.withDefaults()
	b := n.B
	r := rand.New(rand.NewPCG(c.Seed, 0x9e3779b97f4a7c15))
	params := make([]float32, n.Params.Len())
	uniform(params, r)
	b.Upload(n.Params, params)
	x := make([]float32, batch*n.In.Size())
	c.Input(x, r)
	xb := b.Alloc(len(x))
	b.Upload(xb, x)
	wts := make([]float32, batch*n.Out.Size())
	uniform(wts, r)
	dout := b.Alloc(len(wts))
	b.Upload(dout, wts)
	outHost := make([]float32, len(wts))
	loss := func() float64 {
		n.SetRand(rand.New(rand.NewPCG(c.Seed, 7)))
		b.Download(outHost, n.Forward(xb, batch, true))
		return dot(outHost, wts)
	}

	loss()
	n.Backward(dout)
	grads := make([]float32, n.Grads.Len())
	b.Download(grads, n.Grads)
	var bad []gradMismatch
	for _, rg := range n.Trainable() {
		for _, t := range n.tensors {
			if t.Off < rg.Off || t.Off >= rg.Off+rg.Len {
				continue
			}
			sz := t.Spec.Size()
			vals := params[t.Off : t.Off+sz]
			upload := func() { b.Upload(n.Params, params) }
			bad = append(bad, c.compare(t.Name, vals, grads[t.Off:t.Off+sz], upload, loss)...)
		}
	}
	return bad, nil
}

// report fails t with at most a few mismatches.
func report(t testing.TB, what string, bad []gradMismatch, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	for i, m := range bad {
		if i == 5 {
			t.Errorf("%s: ... %d mismatches in all", what, len(bad))
			break
		}
		t.Errorf("%s: %v", what, m)
	}
}

// checkGrads fails t when the input or parameter gradients of the
// single-input layer l disagree with finite differences beyond tol.
func checkGrads(t testing.TB, l Layer, in Shape, batch int, tol float64) {
	t.Helper()
	checkGradsMulti(t, l, []Shape{in}, batch, tol)
}

// checkGradsMulti is checkGrads for a layer of several inputs.
func checkGradsMulti(t testing.TB, l Layer, ins []Shape, batch int, tol float64) {
	t.Helper()
	bad, err := gradCheck{Tol: tol}.layer(l, ins, batch)
	report(t, l.Name(), bad, err)
}

// checkNetGrads fails t when the trainable parameter gradients of n disagree
// with finite differences beyond tol. Prefer networks without kinks between
// parameters (ReLU, max pooling on a parameterised layer's output): moving a
// parameter may cross one, which the input grid cannot prevent.
func checkNetGrads(t testing.TB, n *Net, batch int, tol float64) {
	t.Helper()
	bad, err := gradCheck{Tol: tol}.net(n, batch)
	report(t, "net", bad, err)
}

// brokenLinear is a Linear layer with a deliberate gradient bug, to show that
// the checker catches one.
type brokenLinear struct {
	*Linear
	scaleDX, scaleDW float32 // multiply the input / weight gradient
	skipBias         bool    // leave the bias gradient unwritten
}

func (l *brokenLinear) Backward(p *Pass, din []gpu.Buffer, dout gpu.Buffer, in []gpu.Buffer, out gpu.Buffer, paramGrads bool) {
	if l.skipBias {
		l.NoBias = true // Linear.Backward then skips the bias gradient
	}
	l.Linear.Backward(p, din, dout, in, out, paramGrads)
	l.NoBias = false
	if din[0] != nil {
		p.B.Scale(din[0], l.scaleDX)
	}
	if paramGrads {
		p.B.Scale(l.G[0], l.scaleDW)
	}
}

func TestGradCheckCatchesWrongGradients(t *testing.T) {
	cases := []struct {
		name             string
		scaleDX, scaleDW float32
		skipBias         bool
		want             string // tensor expected to mismatch; "" for none
	}{
		{"exact", 1, 1, false, ""},
		{"input grad 3% high", 1.03, 1, false, "input0"},
		{"input grad 3% low", 0.97, 1, false, "input0"},
		{"weight grad 3% high", 1, 1.03, false, "weight"},
		{"weight grad negated", 1, -1, false, "weight"},
		{"bias grad not written", 1, 1, true, "bias"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := &brokenLinear{Linear: NewLinear("fc", 4), scaleDX: tc.scaleDX, scaleDW: tc.scaleDW, skipBias: tc.skipBias}
			bad, err := gradCheck{}.layer(l, []Shape{{2, 3, 1}}, 3)
			if err != nil {
				t.Fatal(err)
			}
			tensors := map[string]int{}
			for _, m := range bad {
				tensors[m.Tensor]++
			}
			switch {
			case tc.want == "" && len(bad) > 0:
				t.Errorf("correct layer reported %d mismatches, first %v", len(bad), bad[0])
			case tc.want != "" && len(tensors) != 1:
				t.Errorf("want mismatches in %s only, got %v", tc.want, tensors)
			case tc.want != "" && tensors[tc.want] == 0:
				t.Errorf("want mismatches in %s, got %v", tc.want, tensors)
			}
		})
	}
}

func TestNetGradCheckCatchesWrongGradients(t *testing.T) {
	for _, scale := range []float32{1, 1.03} {
		l := &brokenLinear{Linear: NewLinear("fc2", 3), scaleDX: 1, scaleDW: scale}
		n, err := NewNet(cpu.NewCPU(), Shape{4, 1, 1}, []Node{{Layer: NewLinear("fc1", 5)}, {Layer: l}})
		if err != nil {
			t.Fatal(err)
		}
		bad, err := gradCheck{}.net(n, 2)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int{}
		for _, m := range bad {
			got[m.Tensor]++
		}
		switch {
		case scale == 1 && len(bad) > 0:
			t.Errorf("correct net reported mismatches %v", got)
		case scale != 1 && (len(got) != 1 || got["fc2.weight"] == 0):
			t.Errorf("weight grad scaled by %g: want mismatches in fc2.weight only, got %v", scale, got)
		}
	}
}

func TestDistinctValuesAvoidKinks(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{1, 2, 7, 100} {
		x := make([]float32, n)
		distinctValues(x, r)
		seen := map[float32]bool{}
		for _, v := range x {
			if math.Abs(float64(v)) < 0.02 {
				t.Errorf("n=%d: value %g within 0.02 of zero", n, v)
			}
			if seen[v] {
				t.Errorf("n=%d: value %g repeated", n, v)
			}
			seen[v] = true
		}
	}
}
