package gpu

import (
	"fmt"
	"slices"
)

// The structural kernels: CopyStrided, Broadcast and ReduceSum.
//
// ONNX graphs move data around in ways that no single layer kernel covers:
// transposes (channel shuffle, the NHWC↔NCHW pairs that tf2onnx writes),
// slices and splits, padding, concatenation along any axis, elementwise
// arithmetic with numpy broadcasting and reductions. Three generic kernels
// cover all of them, forward and backward:
//
//   - CopyStrided copies (or adds) an index space between two strided views:
//     a transpose is a copy with permuted source strides, a slice one with an
//     offset and step strides, padding and concatenation copy into an offset
//     view of a larger destination, and a zero source stride broadcasts (the
//     backward pass of a reduction).
//   - Broadcast applies +, −, × or ÷ to two strided (broadcast) operands into
//     a contiguous destination.
//   - ReduceSum sums a contiguous tensor over some of its axes (the backward
//     pass of broadcasting, and the forward pass of ReduceMean).
//
// Every kernel first merges adjacent axes that are contiguous in all its
// operands and drops axes of size 1 (canon), so a transpose of N×g×(C/g)×HW
// runs as a 4-axis copy however its caller spelled it, and a plain copy as
// one axis. Each output element is written by one work item, and a reduction
// sums its elements in row-major order of the reduced axes, so the results
// are deterministic (no atomics) on every backend.

// MaxRank is the most axes the structural kernels take after merging
// contiguous axes: a batch axis and up to five per-sample axes.
const MaxRank = 6

// StridedGeom describes a strided copy. The index space is Dims; index i
// (0 <= i[k] < Dims[k]) is element DstOff + Σ i[k]·Dst[k] of the destination
// and SrcOff + Σ i[k]·Src[k] of the source. Strides are in elements and not
// negative; a zero source stride repeats (broadcasts) the source along that
// axis. Distinct indices must address distinct destination elements.
type StridedGeom struct {
	Dims           []int
	Dst, Src       []int
	DstOff, SrcOff int
}

// BinOp names an elementwise binary operation of Broadcast: an entry of
// the binary operator table (binops.go), which gives its semantics.
type BinOp uint8

const (
	BinAdd BinOp = iota + 1 // x + y
	BinSub                  // x - y
	BinMul                  // x * y
	BinDiv                  // x / y
	BinMax                  // max(x, y), NaN if either is
	BinMin                  // min(x, y), NaN if either is
	BinPow                  // x^y
)

// BroadcastGeom describes a broadcast binary operation: the destination is
// contiguous (row-major) of Dims, and its element i reads a at Σ i[k]·A[k]
// and b at Σ i[k]·B[k] (a zero stride broadcasts that operand along k).
type BroadcastGeom struct {
	Dims []int
	A, B []int
}

// ReduceGeom describes a sum over axes: the source is contiguous of In, the
// destination contiguous of Out, where each Out[k] is In[k] (kept) or 1
// (summed over).
type ReduceGeom struct {
	In, Out []int
}

// ContiguousStrides returns the row-major strides of dims.
func ContiguousStrides(dims []int) []int {
	s := make([]int, len(dims))
	acc := 1
	for k := len(dims) - 1; k >= 0; k-- {
		s[k] = acc
		acc *= dims[k]
	}
	return s
}

// IndexSpace is an index space with up to MaxRank axes, merged and padded at
// the front with axes of size 1: the form every backend's structural kernels
// run (StridedGeom.Canon, BroadcastGeom.Canon, ReduceGeom.Canon make one).
type IndexSpace struct {
	Dims    [MaxRank]int
	Strides [3][MaxRank]int // per operand
	Total   int             // elements of the index space
}

// maxAxes is the most axes a caller may pass before merging.
const maxAxes = 2 * MaxRank

// canon merges adjacent axes that are contiguous in every operand, drops
// axes of size 1 and pads to MaxRank. It panics (a bug of the caller) when
// lengths disagree, a stride is negative, or more than MaxRank axes remain.
// It works in fixed arrays, so a kernel call allocates nothing.
func canon(op string, dims []int, strides ...[]int) IndexSpace {
	var g IndexSpace
	var d [maxAxes]int
	var s [3][maxAxes]int
	m, total := 0, 1
	if len(dims) > maxAxes || len(strides) > 3 {
		panic(fmt.Sprintf("gpu: %s: %d axes (at most %d before merging)", op, len(dims), maxAxes))
	}
	for k, n := range dims {
		for _, st := range strides {
			if len(st) != len(dims) || st[k] < 0 {
				panic(fmt.Sprintf("gpu: %s: strides %v for dims %v", op, show(st), show(dims)))
			}
		}
		if n < 0 {
			panic(fmt.Sprintf("gpu: %s: negative dimension in %v", op, show(dims)))
		}
		total *= n
		if n == 1 {
			continue
		}
		if m > 0 {
			merge := true
			for j, st := range strides {
				if s[j][m-1] != st[k]*n {
					merge = false
				}
			}
			if merge {
				d[m-1] *= n
				for j, st := range strides {
					s[j][m-1] = st[k]
				}
				continue
			}
		}
		d[m] = n
		for j, st := range strides {
			s[j][m] = st[k]
		}
		m++
	}
	g.Total = total
	if total == 0 {
		return g
	}
	if m > MaxRank {
		panic(fmt.Sprintf("gpu: %s: %d axes remain of %v after merging contiguous ones, at most %d", op, m, show(dims), MaxRank))
	}
	pad := MaxRank - m
	for k := range MaxRank {
		g.Dims[k] = 1
		if k >= pad {
			g.Dims[k] = d[k-pad]
			for j := range strides {
				g.Strides[j][k] = s[j][k-pad]
			}
		}
	}
	return g
}

// show copies v for a panic message, so that the slices the kernels are
// given do not escape (a kernel call allocates nothing).
func show(v []int) []int { return slices.Clone(v) }

// contiguous writes the row-major strides of dims into dst (of at least
// len(dims)) and returns them.
func contiguous(dst []int, dims []int) []int {
	dst = dst[:len(dims)]
	acc := 1
	for k := len(dims) - 1; k >= 0; k-- {
		dst[k] = acc
		acc *= dims[k]
	}
	return dst
}

// extent is one more than the largest element offset of operand j.
func (g *IndexSpace) extent(j int) int {
	e := 1
	for k := range MaxRank {
		e += (g.Dims[k] - 1) * g.Strides[j][k]
	}
	return e
}

// checkFits panics unless operand j, starting at off, lies inside a buffer
// of n elements.
func (g *IndexSpace) checkFits(op, what string, j, off, n int) {
	if g.Total == 0 {
		return
	}
	if off < 0 || off+g.extent(j) > n {
		panic(fmt.Sprintf("gpu: %s: %s reaches element %d of a buffer of %d", op, what, off+g.extent(j)-1, n))
	}
}

// Canon merges g's index space and checks it against buffers of nd and ns
// elements; it panics (a bug of the caller) where they do not fit.
func (g StridedGeom) Canon(op string, nd, ns int) IndexSpace {
	c := canon(op, g.Dims, g.Dst, g.Src)
	c.checkFits(op, "destination", 0, g.DstOff, nd)
	c.checkFits(op, "source", 1, g.SrcOff, ns)
	return c
}

// Canon merges g's index space (operand 0 the contiguous destination, 1
// a, 2 b) and checks it against buffers of nd, na and nb elements; it
// panics (a bug of the caller) where they do not fit.
func (g BroadcastGeom) Canon(op string, nd, na, nb int) IndexSpace {
	if len(g.Dims) > maxAxes {
		panic(fmt.Sprintf("gpu: %s: %d axes (at most %d before merging)", op, len(g.Dims), maxAxes))
	}
	var buf [maxAxes]int
	c := canon(op, g.Dims, contiguous(buf[:], g.Dims), g.A, g.B)
	if c.Total != nd {
		panic(fmt.Sprintf("gpu: %s: destination of %d elements for dims %v", op, nd, show(g.Dims)))
	}
	c.checkFits(op, "a", 1, 0, na)
	c.checkFits(op, "b", 2, 0, nb)
	return c
}

// ReduceSpace is a reduction split into its kept axes (strides into source
// and destination) and its reduced axes (strides into the source), each
// merged and padded to MaxRank.
type ReduceSpace struct {
	Keep, Red  IndexSpace // Keep: Strides[0] source, Strides[1] destination; Red: Strides[0] source
	Out, Inner int        // destination elements, elements summed into each
}

// Canon splits g into its kept and reduced axes and checks them against
// buffers of nd and ns elements; it panics (a bug of the caller) where they
// do not fit.
func (g ReduceGeom) Canon(op string, nd, ns int) ReduceSpace {
	if len(g.In) != len(g.Out) || len(g.In) > maxAxes {
		panic(fmt.Sprintf("gpu: %s: in %v and out %v differ in rank or have over %d axes", op, show(g.In), show(g.Out), maxAxes))
	}
	var srcBuf, dstBuf, kd, ks, kdst, rd, rs [maxAxes]int
	src, dst := contiguous(srcBuf[:], g.In), contiguous(dstBuf[:], g.Out)
	nk, nr := 0, 0
	for k, n := range g.In {
		switch g.Out[k] {
		case n:
			kd[nk], ks[nk], kdst[nk] = n, src[k], dst[k]
			nk++
		case 1:
			rd[nr], rs[nr] = n, src[k]
			nr++
		default:
			panic(fmt.Sprintf("gpu: %s: out %v is not in %v with some axes reduced to 1", op, show(g.Out), show(g.In)))
		}
	}
	r := ReduceSpace{Keep: canon(op, kd[:nk], ks[:nk], kdst[:nk]), Red: canon(op, rd[:nr], rs[:nr])}
	r.Out, r.Inner = r.Keep.Total, r.Red.Total
	if r.Out != nd || r.Out*r.Inner != ns {
		panic(fmt.Sprintf("gpu: %s: buffers of %d and %d elements for in %v, out %v", op, ns, nd, show(g.In), show(g.Out)))
	}
	return r
}

// Offset returns the element offset of linear index i of g's index space
// for operand j (the row-major decomposition the kernels use).
func (g *IndexSpace) Offset(j, i int) int {
	off := 0
	for k := MaxRank - 1; k >= 0; k-- {
		n := g.Dims[k]
		off += (i % n) * g.Strides[j][k]
		i /= n
	}
	return off
}
