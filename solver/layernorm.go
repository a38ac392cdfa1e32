package solver

import (
	"fmt"

	"github.com/cotrain/cotrain/gpu"
)

// LayerNorm normalises each sample over its trailing per-sample axes
// Axis.. of the logical dims Dims (PyTorch's nn.LayerNorm over
// normalized_shape = Dims[Axis:], ONNX's LayerNormalization), then scales
// and shifts by the learnable weight and bias of that shape (init 1 and 0,
// as PyTorch): y = (x − mean)/sqrt(var + Eps)·weight + bias, the variance
// biased. Axes count from 0 after the batch.
//
// It is composed from the backend's ReduceSum, Broadcast, Mul, Axpy and
// the operator table's Pow (for (var + Eps)^-½), so every backend runs it
// without a kernel of its own. The forward pass keeps x̂ and 1/σ per row
// for the backward pass: dx = (g − mean(g) − x̂·mean(g·x̂))/σ with
// g = dy·weight; dweight = Σ dy·x̂ and dbias = Σ dy over the batch and the
// leading axes.
type LayerNorm struct {
	Base
	Dims []int
	Axis int
	Eps  float32

	rows, size int // per sample: leading positions and normalised elements
	capN, curN int
	xhat, tmp  gpu.Buffer // N·rows×size: x̂ (kept), scratch
	tmp2       gpu.Buffer // N·rows×size
	rstd, mean gpu.Buffer // N·rows: 1/σ (kept), scratch
	eps        gpu.Buffer // one element: Eps

	v lnViews // views of curN samples
}

// lnViews are views of the first samples of LayerNorm's buffers.
type lnViews struct{ xhat, tmp, tmp2, rstd, mean gpu.Buffer }

// NewLayerNorm returns a layer norm over dims[axis:] of inputs read as dims.
func NewLayerNorm(name string, dims []int, axis int, eps float32) *LayerNorm {
	return &LayerNorm{Base: Base{LayerName: name}, Dims: dims, Axis: axis, Eps: eps}
}

// Kind implements Layer.
func (*LayerNorm) Kind() string { return "layernorm" }

// Setup implements Layer.
func (l *LayerNorm) Setup(in []Shape) (Shape, error) {
	s, err := one(l.Kind(), in)
	if err != nil {
		return Shape{}, err
	}
	if err := checkDims(l.Kind(), l.LayerName, l.Dims, s); err != nil {
		return Shape{}, err
	}
	if l.Axis < 0 || l.Axis >= len(l.Dims) {
		return Shape{}, fmt.Errorf("solver: layernorm %s: axis %d of dims %v", l.LayerName, l.Axis, l.Dims)
	}
	if !(l.Eps > 0) {
		return Shape{}, fmt.Errorf("solver: layernorm %s: epsilon %g, want > 0", l.LayerName, l.Eps)
	}
	l.rows, l.size = prod(l.Dims[:l.Axis]), prod(l.Dims[l.Axis:])
	return s, nil
}

// Params implements Layer: weight and bias over Dims[Axis:].
func (l *LayerNorm) Params() []ParamSpec {
	d := l.Dims[l.Axis:]
	return []ParamSpec{{Name: "weight", Dims: d, Init: InitOnes}, {Name: "bias", Dims: d, Init: InitZeros}}
}

// Bind implements Layer.
func (l *LayerNorm) Bind(b gpu.Backend, params, grads, state []gpu.Buffer) {
	l.Base.Bind(b, params, grads, state)
	l.eps = b.Alloc(1)
	b.Upload(l.eps, []float32{l.Eps})
}

// Resize implements Layer.
func (l *LayerNorm) Resize(b gpu.Backend, n int) {
	if n <= l.capN {
		return
	}
	l.capN, l.curN = n, 0
	m := n * l.rows * l.size
	l.xhat, l.tmp, l.tmp2 = b.Alloc(m), b.Alloc(m), b.Alloc(m)
	l.rstd, l.mean = b.Alloc(n*l.rows), b.Alloc(n*l.rows)
}

// views returns views of n samples of the layer's buffers, made again only
// when n changes (a view made afresh would allocate on some backends).
func (l *LayerNorm) views(b gpu.Backend, n int) {
	if n == l.curN {
		return
	}
	l.curN = n
	m, r := n*l.rows*l.size, n*l.rows
	l.v.xhat, l.v.tmp, l.v.tmp2 = b.View(l.xhat, 0, m), b.View(l.tmp, 0, m), b.View(l.tmp2, 0, m)
	l.v.rstd, l.v.mean = b.View(l.rstd, 0, r), b.View(l.mean, 0, r)
}

// Geometries over R rows of size elements: a row's sum, a per-row value
// broadcast along the row, a per-element parameter broadcast over rows.
func (l *LayerNorm) rowSum(r int) gpu.ReduceGeom {
	return gpu.ReduceGeom{In: []int{r, l.size}, Out: []int{r, 1}}
}
func (l *LayerNorm) colSum(r int) gpu.ReduceGeom {
	return gpu.ReduceGeom{In: []int{r, l.size}, Out: []int{1, l.size}}
}
func (l *LayerNorm) perRow(r int) gpu.BroadcastGeom {
	return gpu.BroadcastGeom{Dims: []int{r, l.size}, A: []int{l.size, 1}, B: []int{1, 0}}
}
func (l *LayerNorm) perCol(r int) gpu.BroadcastGeom {
	return gpu.BroadcastGeom{Dims: []int{r, l.size}, A: []int{l.size, 1}, B: []int{0, 1}}
}

// Forward implements Layer.
func (l *LayerNorm) Forward(p *Pass, out gpu.Buffer, in []gpu.Buffer) {
	b, r := p.B, p.N*l.rows
	l.views(b, p.N)
	inv := 1 / float32(l.size)
	b.ReduceSum(l.v.mean, in[0], l.rowSum(r), inv)
	b.Broadcast(gpu.BinSub, l.v.tmp, in[0], l.v.mean, l.perRow(r)) // x − mean
	b.Mul(l.v.xhat, l.v.tmp, l.v.tmp)
	b.ReduceSum(l.v.rstd, l.v.xhat, l.rowSum(r), inv) // the biased variance
	b.Broadcast(gpu.BinAdd, l.v.rstd, l.v.rstd, l.eps, gpu.BroadcastGeom{Dims: []int{r}, A: []int{1}, B: []int{0}})
	b.Activate(gpu.Act{Kind: gpu.KindPow, Alpha: -0.5}, l.v.rstd, l.v.rstd)
	b.Broadcast(gpu.BinMul, l.v.xhat, l.v.tmp, l.v.rstd, l.perRow(r))
	b.Broadcast(gpu.BinMul, out, l.v.xhat, l.P[0], l.perCol(r))
	b.Broadcast(gpu.BinAdd, out, out, l.P[1], l.perCol(r))
}

// BackwardReads implements BackwardReader: nothing (x̂ and 1/σ are kept).
func (*LayerNorm) BackwardReads(bool) (in, out bool) { return false, false }

// Backward implements Layer.
func (l *LayerNorm) Backward(p *Pass, din []gpu.Buffer, dout gpu.Buffer, _ []gpu.Buffer, _ gpu.Buffer, paramGrads bool) {
	b, r := p.B, p.N*l.rows
	l.views(b, p.N)
	if paramGrads {
		b.Mul(l.v.tmp, dout, l.v.xhat)
		b.ReduceSum(l.G[0], l.v.tmp, l.colSum(r), 1)
		b.ReduceSum(l.G[1], dout, l.colSum(r), 1)
	}
	if din[0] == nil {
		return
	}
	inv := 1 / float32(l.size)
	g := l.v.tmp
	b.Broadcast(gpu.BinMul, g, dout, l.P[0], l.perCol(r))
	b.Mul(l.v.tmp2, g, l.v.xhat)
	b.ReduceSum(l.v.mean, l.v.tmp2, l.rowSum(r), inv) // mean(g·x̂)
	b.Broadcast(gpu.BinMul, l.v.tmp2, l.v.xhat, l.v.mean, l.perRow(r))
	b.Axpy(-1, l.v.tmp2, g) // g − x̂·mean(g·x̂)
	b.ReduceSum(l.v.mean, dout, l.rowSum(r), 0)
	b.Broadcast(gpu.BinMul, l.v.tmp2, dout, l.P[0], l.perCol(r))
	b.ReduceSum(l.v.mean, l.v.tmp2, l.rowSum(r), inv) // mean(g)
	b.Broadcast(gpu.BinSub, g, g, l.v.mean, l.perRow(r))
	b.Broadcast(gpu.BinMul, din[0], g, l.v.rstd, l.perRow(r))
}
