package solver

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/cpu"
)

// The structural layers: forward values on small hand-checked cases, and
// every gradient against finite differences. PyTorch golden values for them
// are in golden_struct_test.go.

func seq(n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(i)
	}
	return v
}

func TestShapeOpsForward(t *testing.T) {
	cases := []struct {
		name string
		l    Layer
		ins  []Shape
		xs   [][]float32
		want []float32
	}{
		// One sample 2×3 transposed to 3×2.
		{"transpose", NewTranspose("t", []int{2, 3}, []int{1, 0}), []Shape{{6, 1, 1}}, [][]float32{seq(6)},
			[]float32{0, 3, 1, 4, 2, 5}},
		// Channel shuffle of 4 channels in 2 groups (1×1 spatial): 0 2 1 3.
		{"shuffle", NewTranspose("t", []int{2, 2, 1, 1}, []int{1, 0, 2, 3}), []Shape{{4, 1, 1}}, [][]float32{seq(4)},
			[]float32{0, 2, 1, 3}},
		// Rows 1 and 3 of a 5-row column, then columns 1, 2 of 3.
		{"slice", NewSlice("s", []int{5, 3}, []int{1, 1}, []int{2, 1}, []int{2, 2}), []Shape{{15, 1, 1}},
			[][]float32{seq(15)}, []float32{4, 5, 10, 11}},
		{"pad", NewPad("p", []int{2}, []int{1}, []int{2}), []Shape{{2, 1, 1}}, [][]float32{{7, 8}},
			[]float32{0, 7, 8, 0, 0}},
		{"pad reflect", NewPadMode("p", []int{3}, []int{2}, []int{2}, "reflect"), []Shape{{3, 1, 1}}, [][]float32{{1, 2, 3}},
			[]float32{3, 2, 1, 2, 3, 2, 1}},
		{"pad edge", NewPadMode("p", []int{2}, []int{1}, []int{2}, "edge"), []Shape{{2, 1, 1}}, [][]float32{{7, 8}},
			[]float32{7, 7, 8, 8, 8}},
		// 2×1 and 2×2 joined along axis 1: 2×3.
		{"concatnd", NewConcatND("c", 1, []int{2, 1}), []Shape{{2, 1, 1}, {4, 1, 1}}, [][]float32{{1, 2}, {3, 4, 5, 6}},
			[]float32{1, 3, 4, 2, 5, 6}},
		{"gate", NewBinary("m", gpu.BinMul, []int{2, 1, 2}, []int{2, 1, 1}), []Shape{{2, 1, 2}, {2, 1, 1}},
			[][]float32{{1, 2, 3, 4}, {10, 100}}, []float32{10, 20, 300, 400}},
		{"const first", NewBinaryConst("d", gpu.BinDiv, []int{2}, []int{1}, []float32{12}, true), []Shape{{2, 1, 1}},
			[][]float32{{3, 4}}, []float32{4, 3}},
		{"const sub", NewBinaryConst("d", gpu.BinSub, []int{2}, []int{2}, []float32{1, 2}, false), []Shape{{2, 1, 1}},
			[][]float32{{3, 4}}, []float32{2, 2}},
		{"mean hw", NewReduce("r", []int{2, 1, 2}, []int{1, 2}, true), []Shape{{2, 1, 2}}, [][]float32{{1, 2, 3, 5}},
			[]float32{1.5, 4}},
		{"sum c", NewReduce("r", []int{2, 2}, []int{0}, false), []Shape{{4, 1, 1}}, [][]float32{{1, 2, 3, 5}},
			[]float32{4, 7}},
		{"reshape", NewReshape("r", []int{2, 2}), []Shape{{4, 1, 1}}, [][]float32{{1, 2, 3, 5}}, []float32{1, 2, 3, 5}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := runJoin(t, tc.l, tc.ins, tc.xs, 1)
			if !slices.Equal(got, tc.want) {
				t.Errorf("output %v, want %v", got, tc.want)
			}
		})
	}
}

func TestShapeOpsSetupErrors(t *testing.T) {
	cases := []struct {
		name string
		l    Layer
		ins  []Shape
		want string
	}{
		{"reshape size", NewReshape("r", []int{3, 3}), []Shape{{8, 1, 1}}, "9 elements"},
		{"perm", NewTranspose("t", []int{2, 4}, []int{0, 0}), []Shape{{8, 1, 1}}, "not a permutation"},
		{"no perm", NewTranspose("t", []int{2, 4}, nil), []Shape{{8, 1, 1}}, "not a permutation"},
		{"slice past end", NewSlice("s", []int{4}, []int{2}, []int{2}, []int{2}), []Shape{{4, 1, 1}}, "axis 0 of 4"},
		{"pad negative", NewPad("p", []int{4}, []int{-1}, []int{0}), []Shape{{4, 1, 1}}, "negative"},
		{"reflect too long", NewPadMode("p", []int{4}, []int{4}, []int{0}, "reflect"), []Shape{{4, 1, 1}}, "shorter than"},
		{"pad mode", NewPadMode("p", []int{4}, []int{1}, []int{0}, "wrap"), []Shape{{4, 1, 1}}, `mode "wrap"`},
		{"concat misfit", NewConcatND("c", 1, []int{2, 2}), []Shape{{4, 1, 1}, {3, 1, 1}}, "does not fit"},
		{"no broadcast", NewBinary("b", gpu.BinAdd, []int{2, 3}, []int{3, 3}), []Shape{{6, 1, 1}, {9, 1, 1}}, "do not broadcast"},
		{"rank", NewBinary("b", gpu.BinAdd, []int{2, 3}, []int{3}), []Shape{{6, 1, 1}, {3, 1, 1}}, "differ in rank"},
		{"negative const dims", NewBinaryConst("b", gpu.BinAdd, []int{1, 1}, []int{-1, -1}, []float32{2}, false), []Shape{{1, 1, 1}}, "must be positive"},
		{"huge slice", NewSlice("s", []int{4}, []int{1}, []int{1 << 30}, []int{1 << 30}), []Shape{{4, 1, 1}}, "axis 0 of 4"},
		{"huge pad", NewPad("p", []int{4, 4}, []int{1 << 28, 0}, []int{1 << 28, 0}), []Shape{{16, 1, 1}}, "elements per sample"},
		{"const size", NewBinaryConst("b", gpu.BinAdd, []int{2, 3}, []int{2, 1}, []float32{2}, false), []Shape{{6, 1, 1}}, "1 values for dims"},
		{"reduce axes", NewReduce("r", []int{2, 3}, []int{0, 0}, true), []Shape{{6, 1, 1}}, "axes"},
		{"too many axes", NewReshape("r", []int{1, 1, 1, 1, 1, 8}), []Shape{{8, 1, 1}}, "1 to 5"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.l.Setup(tc.ins)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// positive fills inputs away from 0 (divisors).
func positive(dst []float32, r *rand.Rand) {
	for i := range dst {
		dst[i] = 0.5 + float32(r.Float64())
	}
}

func TestShapeOpsGradients(t *testing.T) {
	cases := []struct {
		name string
		l    Layer
		ins  []Shape
		pos  bool
	}{
		{"transpose nhwc", NewTranspose("t", []int{3, 4, 5}, []int{2, 0, 1}), []Shape{{3, 4, 5}}, false},
		{"shuffle", NewTranspose("t", []int{2, 3, 2, 2}, []int{1, 0, 2, 3}), []Shape{{6, 2, 2}}, false},
		{"slice", NewSlice("s", []int{5, 3, 4}, []int{1, 0, 1}, []int{2, 1, 2}, []int{2, 3, 2}), []Shape{{5, 3, 4}}, false},
		{"pad", NewPad("p", []int{2, 3, 3}, []int{0, 1, 2}, []int{1, 1, 0}), []Shape{{2, 3, 3}}, false},
		{"pad reflect", NewPadMode("p", []int{2, 3, 4}, []int{1, 2, 1}, []int{0, 1, 3}, "reflect"), []Shape{{2, 3, 4}}, false},
		{"pad edge", NewPadMode("p", []int{2, 3, 4}, []int{1, 2, 0}, []int{2, 1, 3}, "edge"), []Shape{{2, 3, 4}}, false},
		{"concatnd", NewConcatND("c", 2, []int{2, 2, 1}), []Shape{{2, 2, 1}, {2, 2, 3}, {2, 2, 2}}, false},
		{"reshape", NewReshape("r", []int{6, 2}), []Shape{{3, 2, 2}}, false},
		{"mean", NewReduce("r", []int{3, 2, 4}, []int{1, 2}, true), []Shape{{3, 2, 4}}, false},
		{"sum", NewReduce("r", []int{3, 2, 4}, []int{0}, false), []Shape{{3, 2, 4}}, false},
	}
	for _, e := range gpu.BinaryOps() { // every operation of the binary operator table
		op := e.Op
		cases = append(cases,
			struct {
				name string
				l    Layer
				ins  []Shape
				pos  bool
			}{"gate " + op.String(), NewBinary("b", op, []int{3, 2, 2}, []int{3, 1, 1}), []Shape{{3, 2, 2}, {3, 1, 1}}, true},
			struct {
				name string
				l    Layer
				ins  []Shape
				pos  bool
			}{"both broadcast " + op.String(), NewBinary("b", op, []int{1, 2, 2}, []int{3, 1, 1}), []Shape{{1, 2, 2}, {3, 1, 1}}, true},
			struct {
				name string
				l    Layer
				ins  []Shape
				pos  bool
			}{"const " + op.String(), NewBinaryConst("b", op, []int{3, 2, 2}, []int{3, 1, 1}, []float32{0.7, 1.3, 2}, false), []Shape{{3, 2, 2}}, true},
			struct {
				name string
				l    Layer
				ins  []Shape
				pos  bool
			}{"const first " + op.String(), NewBinaryConst("b", op, []int{3, 2, 2}, []int{1, 1, 1}, []float32{1.5}, true), []Shape{{3, 2, 2}}, true},
		)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := gradCheck{Eps: 1e-3, Tol: 1e-2}
			if tc.pos {
				c.Input = positive
			}
			bad, err := c.layer(tc.l, tc.ins, 2)
			report(t, tc.name, bad, err)
		})
	}
}

// TestStructuralNetStepAllocatesNothing: a network of every structural
// layer and a channel concat (a convolution first, so that gradients flow
// to parameters) takes steady-state steps on the CPU without allocating.
func TestStructuralNetStepAllocatesNothing(t *testing.T) {
	b := cpu.NewCPU()
	net, err := NewNet(b, Shape{C: 4, H: 3, W: 2}, []Node{
		{Layer: NewConv2D("conv", ConvConfig{Out: 4, KH: 1, KW: 1})},
		{Layer: NewReshape("view", []int{2, 2, 3, 2})},
		{Layer: NewTranspose("shuffle", []int{2, 2, 3, 2}, []int{1, 0, 2, 3})},
		{Layer: NewReshape("unview", []int{4, 3, 2})},
		{Layer: NewSlice("half", []int{4, 3, 2}, []int{0, 0, 0}, []int{1, 1, 1}, []int{2, 3, 2})},
		{Layer: NewSlice("other", []int{4, 3, 2}, []int{2, 0, 0}, []int{1, 2, 1}, []int{2, 2, 2}), Inputs: []int{3}},
		{Layer: NewPad("pad", []int{2, 2, 2}, []int{0, 1, 0}, []int{0, 0, 0})},
		{Layer: NewConcatND("join", 0, []int{2, 3, 2}), Inputs: []int{4, 6}},
		{Layer: NewReduce("mean", []int{4, 3, 2}, []int{1, 2}, true)},
		{Layer: NewBinary("gate", gpu.BinMul, []int{4, 3, 2}, []int{4, 1, 1}), Inputs: []int{7, 8}},
		{Layer: NewBinaryConst("scale", gpu.BinDiv, []int{4, 3, 2}, []int{4, 1, 1}, []float32{1, 2, 3, 4}, true)},
		{Layer: NewBinary("sub", gpu.BinSub, []int{4, 3, 2}, []int{4, 3, 2}), Inputs: []int{10, 7}},
		{Layer: NewConcat("cat"), Inputs: []int{11, 0}},
		{Layer: NewLinear("out", 3)},
	})
	if err != nil {
		t.Fatal(err)
	}
	net.InitParams(rand.New(rand.NewPCG(1, 2)))
	const batch = 5
	x, dy := b.Alloc(batch*net.In.Size()), b.Alloc(batch*3)
	b.Fill(x, 0.5)
	b.Fill(dy, 0.1)
	step := func() {
		net.Forward(x, batch, true)
		net.Backward(dy)
	}
	step()
	if allocs := testing.AllocsPerRun(20, step); allocs != 0 {
		t.Errorf("%v allocations per steady-state step, want 0", allocs)
	}
}
