// Package gputest holds what the tests of every backend share: the cases
// (geometries, activations) the kernels are checked on, and comparisons.
package gputest

import (
	"math"

	"github.com/cotrain/cotrain/gpu"
)

// PermGeom is the copy of a contiguous tensor of dims into the contiguous
// transpose by perm (out axis k is in axis perm[k]).
func PermGeom(dims, perm []int) gpu.StridedGeom {
	in := gpu.ContiguousStrides(dims)
	out := make([]int, len(dims))
	src := make([]int, len(dims))
	for k, p := range perm {
		out[k], src[k] = dims[p], in[p]
	}
	return gpu.StridedGeom{Dims: out, Dst: gpu.ContiguousStrides(out), Src: src}
}

// StridedCase is a CopyStrided geometry with its buffers' lengths.
type StridedCase struct {
	Name   string
	G      gpu.StridedGeom
	ND, NS int // destination and source elements
}

// StridedCases are the layouts the importer produces.
func StridedCases() []StridedCase {
	type c = StridedCase
	var out []c
	perm := func(name string, dims, p []int) {
		n := 1
		for _, d := range dims {
			n *= d
		}
		out = append(out, c{name, PermGeom(dims, p), n, n})
	}
	perm("channel shuffle", []int{3, 2, 5, 4, 3}, []int{0, 2, 1, 3, 4})
	perm("nhwc to nchw", []int{2, 5, 6, 7}, []int{0, 3, 1, 2})
	perm("nchw to nhwc", []int{2, 7, 5, 6}, []int{0, 2, 3, 1})
	perm("plain copy", []int{4, 3, 2}, []int{0, 1, 2})
	perm("6-D reversal", []int{2, 3, 2, 3, 2, 2}, []int{0, 5, 4, 3, 2, 1})
	// Slice of N×8×6×7 along H: rows 1, 3, 5 (step 2) into N×8×3×7.
	out = append(out, c{"slice step", gpu.StridedGeom{Dims: []int{2, 8, 3, 7}, Dst: gpu.ContiguousStrides([]int{2, 8, 3, 7}),
		Src: []int{8 * 6 * 7, 6 * 7, 2 * 7, 1}, SrcOff: 7}, 2 * 8 * 3 * 7, 2 * 8 * 6 * 7})
	// Pad N×3×4×5 into N×3×7×8 at (1, 2): the interior copy.
	out = append(out, c{"pad interior", gpu.StridedGeom{Dims: []int{2, 3, 4, 5}, Dst: []int{3 * 7 * 8, 7 * 8, 8, 1},
		Src: gpu.ContiguousStrides([]int{2, 3, 4, 5}), DstOff: 8 + 2}, 2 * 3 * 7 * 8, 2 * 3 * 4 * 5})
	// Concat input 1 (N×2×3×4 along H, at 5 of 9).
	out = append(out, c{"concat along H", gpu.StridedGeom{Dims: []int{2, 2, 3, 4}, Dst: []int{2 * 9 * 4, 9 * 4, 4, 1},
		Src: gpu.ContiguousStrides([]int{2, 2, 3, 4}), DstOff: 5 * 4}, 2 * 2 * 9 * 4, 2 * 2 * 3 * 4})
	// Broadcast N×C×1×1 over H×W (a reduction's backward pass).
	out = append(out, c{"broadcast spatial", gpu.StridedGeom{Dims: []int{3, 5, 4, 6}, Dst: gpu.ContiguousStrides([]int{3, 5, 4, 6}),
		Src: []int{5, 1, 0, 0}}, 3 * 5 * 4 * 6, 3 * 5})
	return out
}

// BroadcastCase returns the geometry of a op b where a has dims ad and b
// dims bd (numpy rules, right-aligned; both of the output's rank here).
func BroadcastCase(ad, bd []int) (gpu.BroadcastGeom, int, int) {
	g := gpu.BroadcastGeom{Dims: make([]int, len(ad)), A: gpu.ContiguousStrides(ad), B: gpu.ContiguousStrides(bd)}
	na, nb := 1, 1
	for k := range ad {
		g.Dims[k] = max(ad[k], bd[k])
		if ad[k] == 1 {
			g.A[k] = 0
		}
		if bd[k] == 1 {
			g.B[k] = 0
		}
		na, nb = na*ad[k], nb*bd[k]
	}
	return g, na, nb
}

// BroadcastShapes are operand shapes of broadcasting binary operations
// (a, b) that models produce.
func BroadcastShapes() [][2][]int {
	return [][2][]int{
		{{4, 6, 5, 7}, {4, 6, 1, 1}}, // squeeze-excitation gate
		{{4, 6, 5, 7}, {1, 6, 1, 1}}, // per-channel constant
		{{4, 6, 5, 7}, {1, 1, 1, 1}}, // scalar
		{{4, 6, 5, 7}, {4, 6, 5, 7}}, // same shape
		{{4, 1, 5, 7}, {4, 6, 1, 1}}, // both broadcast
		{{3, 2, 4, 3, 5}, {1, 2, 1, 3, 1}},
	}
}

// ReduceShapes are the reductions models produce.
func ReduceShapes() []gpu.ReduceGeom {
	return []gpu.ReduceGeom{
		{In: []int{4, 6, 5, 7}, Out: []int{4, 6, 1, 1}}, // spatial mean, SE gate gradient
		{In: []int{4, 6, 5, 7}, Out: []int{1, 6, 1, 1}}, // per-channel
		{In: []int{4, 6, 5, 7}, Out: []int{1, 1, 1, 1}}, // everything
		{In: []int{4, 6, 5, 7}, Out: []int{4, 6, 5, 7}}, // nothing
		{In: []int{4, 6, 5, 7}, Out: []int{4, 1, 5, 1}}, // interleaved
		{In: []int{3, 2, 4, 3, 5}, Out: []int{3, 1, 4, 1, 5}},
	}
}

// ParamActs are the activations of the operator table other than ReLU and
// ReLU6 (which have kernels of their own), each with the parameter sets
// the table's Tests give: PyTorch's Hardsigmoid (1/6, 0.5) and ONNX's
// default (0.2, 0.5), slopes of either sign, one-sided and two-sided clips.
func ParamActs() []gpu.Act {
	var out []gpu.Act
	for _, op := range gpu.UnaryOps() {
		if op.Kind != gpu.KindReLU && op.Kind != gpu.KindReLU6 {
			out = append(out, op.TestActs()...)
		}
	}
	return out
}

// SameBits reports whether a and b hold the same float32 bit patterns.
func SameBits(a, b []float32) bool {
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return len(a) == len(b)
}

// SameValues reports whether a and b hold the same float32 bit patterns,
// except that any NaN matches any NaN: a device may hand a NaN it passes
// through back with another payload (NVIDIA's compiler turns a guarded
// max into the PTX max.NaN, which returns the canonical NaN), and which
// NaN it is carries no meaning.
func SameValues(a, b []float32) bool {
	for i := range a {
		x, y := a[i], b[i]
		if x != x && y != y {
			continue
		}
		if math.Float32bits(x) != math.Float32bits(y) {
			return false
		}
	}
	return len(a) == len(b)
}

// Im2col is the column matrix of one sample's group x (C/G×H×W) for g,
// written from the definition: row (c, r, s), column (oh, ow) holds
// x[c, oh·StrideH - PadH + r, ow·StrideW - PadW + s], zero outside the
// plane. col has C/G·R·S rows of OH·OW.
func Im2col(g gpu.ConvGeom, col, x []float32) {
	cg := g.C / g.GroupCount()
	for c := range cg {
		for r := range g.R {
			for s := range g.S {
				row := (c*g.R+r)*g.S + s
				for oh := range g.OH {
					for ow := range g.OW {
						ih, iw := oh*g.StrideH-g.PadH+r, ow*g.StrideW-g.PadW+s
						v := float32(0)
						if ih >= 0 && ih < g.H && iw >= 0 && iw < g.W {
							v = x[(c*g.H+ih)*g.W+iw]
						}
						col[row*g.OH*g.OW+oh*g.OW+ow] = v
					}
				}
			}
		}
	}
}
