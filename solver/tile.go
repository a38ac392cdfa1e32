package solver

import (
	"fmt"
	"slices"

	"github.com/cotrain/cotrain/gpu"
)

// Tile repeats its input Repeats[k] times along per-sample axis k (ONNX's
// Tile with the batch's repeat 1, torch's Tensor.repeat): output axis k is
// In[k]·Repeats[k] long, copy t of the input at [t·In[k], (t+1)·In[k]).
//
// Read as axes pairs, the output of axis k is Repeats[k]×In[k] in
// row-major order, so Forward is one broadcasting copy (the input's stride
// 0 along every repeat axis) and Backward one sum over the repeat axes.
// Axes of length 1 are left out of both geometries; what remains must fit
// gpu.MaxRank axes (Setup says when it does not).
type Tile struct {
	Base
	In, Repeats []int

	fwd gpu.StridedGeom // batch, then (repeat, axis) pairs of more than one element
	bwd gpu.ReduceGeom  // the same axes, the repeats summed
}

var _ Layer = (*Tile)(nil)

// NewTile returns a tiling of per-sample dims in by repeats.
func NewTile(name string, in, repeats []int) *Tile {
	return &Tile{Base: Base{LayerName: name}, In: in, Repeats: repeats}
}

// Kind implements Layer.
func (*Tile) Kind() string { return "tile" }

// OutDims returns the tiled per-sample dims.
func (l *Tile) OutDims() []int {
	out := slices.Clone(l.In)
	for k := range out {
		out[k] *= l.Repeats[k]
	}
	return out
}

// Setup implements Layer.
func (l *Tile) Setup(in []Shape) (Shape, error) {
	s, err := one("tile", in)
	if err != nil {
		return Shape{}, err
	}
	if err := checkDims("tile", l.LayerName, l.In, s); err != nil {
		return Shape{}, err
	}
	if len(l.Repeats) != len(l.In) {
		return Shape{}, fmt.Errorf("solver: tile %s: %d repeats for %d axes", l.LayerName, len(l.Repeats), len(l.In))
	}
	if err := boundedDims("tile", l.LayerName, "repeats", l.Repeats); err != nil {
		return Shape{}, err
	}
	out := l.OutDims()
	if err := boundedDims("tile", l.LayerName, "tiled dimensions", out); err != nil {
		return Shape{}, err
	}
	// The pairs of axes, those of one element left out; strides of the
	// input (0 on a repeat axis) and of the output.
	dims, src := []int{1}, []int{s.Size()}
	inS := gpu.ContiguousStrides(l.In)
	for k := range l.In {
		if l.Repeats[k] > 1 {
			dims, src = append(dims, l.Repeats[k]), append(src, 0)
		}
		if l.In[k] > 1 {
			dims, src = append(dims, l.In[k]), append(src, inS[k])
		}
	}
	if len(dims) > gpu.MaxRank {
		return Shape{}, fmt.Errorf("solver: tile %s: %v repeated %v needs %d axes (at most %d)", l.LayerName, l.In, l.Repeats, len(dims), gpu.MaxRank)
	}
	l.fwd = gpu.StridedGeom{Dims: dims, Dst: gpu.ContiguousStrides(dims), Src: src}
	red := slices.Clone(dims)
	for i := range red {
		if i > 0 && src[i] == 0 {
			red[i] = 1
		}
	}
	l.bwd = gpu.ReduceGeom{In: slices.Clone(dims), Out: red}
	return DimsShape(out), nil
}

// Forward implements Layer.
func (l *Tile) Forward(p *Pass, out gpu.Buffer, in []gpu.Buffer) {
	p.B.CopyStrided(out, in[0], atN(l.fwd, p.N), false)
}

// BackwardReads implements BackwardReader: nothing.
func (*Tile) BackwardReads(bool) (in, out bool) { return false, false }

// Backward implements Layer: din is dout summed over the copies.
func (l *Tile) Backward(p *Pass, din []gpu.Buffer, dout gpu.Buffer, _ []gpu.Buffer, _ gpu.Buffer, _ bool) {
	if din[0] == nil {
		return
	}
	l.bwd.In[0], l.bwd.Out[0] = p.N, p.N
	p.B.ReduceSum(din[0], dout, l.bwd, 1)
}
