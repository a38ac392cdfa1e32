package solver

import (
	"fmt"

	"github.com/cotrain/cotrain/gpu"
)

// rowNorm is the normalisation LayerNorm and GroupNorm share: a batch read
// as N·rows rows of size elements, each row normalised to zero mean and
// unit (biased) variance, x̂ = (x − mean)/sqrt(var + eps). It is composed
// from the backend's ReduceSum, Broadcast, Mul, Axpy and the operator
// table's Pow (for (var + eps)^-½), so every backend runs it without a
// kernel of its own, and keeps x̂ and 1/σ per row for the backward pass:
// given g = dy·(the affine scale), dx = (g − mean(g) − x̂·mean(g·x̂))/σ.
// Its two N·rows×size scratch tensors are the pass's shared workspace.
type rowNorm struct {
	rows, size  int // per sample
	eps         float32
	capN        int
	curN, wsLen int        // the views' samples and workspace
	xhat        gpu.Buffer // N·rows×size: x̂ (kept)
	rstd, mean  gpu.Buffer // N·rows: 1/σ (kept), scratch
	epsBuf      gpu.Buffer // one element: eps

	v normViews // views of curN samples; tmp and tmp2 in the workspace (the layers' g in tmp)
}

// normViews are views of the first samples of rowNorm's buffers.
type normViews struct{ xhat, tmp, tmp2, rstd, mean gpu.Buffer }

func (r *rowNorm) bind(b gpu.Backend) {
	r.epsBuf = b.Alloc(1)
	b.Upload(r.epsBuf, []float32{r.eps})
}

func (r *rowNorm) resize(b gpu.Backend, n int) {
	if n <= r.capN {
		return
	}
	r.capN, r.curN = n, 0
	r.xhat = b.Alloc(n * r.rows * r.size)
	r.rstd, r.mean = b.Alloc(n*r.rows), b.Alloc(n*r.rows)
}

// workspace is the scratch of a call with n samples: tmp and tmp2.
func (r *rowNorm) workspace(n int) int { return 2 * n * r.rows * r.size }

// views makes the views of p.N samples, again only when the batch or the
// workspace changes (a view made afresh would allocate on some backends).
func (r *rowNorm) views(p *Pass) {
	n, b := p.N, p.B
	if n == r.curN && p.WS.Len() == r.wsLen {
		return
	}
	r.curN, r.wsLen = n, p.WS.Len()
	m, k := n*r.rows*r.size, n*r.rows
	r.v.xhat, r.v.tmp, r.v.tmp2 = b.View(r.xhat, 0, m), b.View(p.WS, 0, m), b.View(p.WS, m, m)
	r.v.rstd, r.v.mean = b.View(r.rstd, 0, k), b.View(r.mean, 0, k)
}

// rowSum sums each of k rows; perRow broadcasts a value per row along it.
func (r *rowNorm) rowSum(k int) gpu.ReduceGeom {
	return gpu.ReduceGeom{In: []int{k, r.size}, Out: []int{k, 1}}
}
func (r *rowNorm) perRow(k int) gpu.BroadcastGeom {
	return gpu.BroadcastGeom{Dims: []int{k, r.size}, A: []int{r.size, 1}, B: []int{1, 0}}
}

// normalize sets v.xhat and v.rstd from x (p.N samples).
func (r *rowNorm) normalize(p *Pass, x gpu.Buffer) {
	b, k := p.B, p.N*r.rows
	r.views(p)
	inv := 1 / float32(r.size)
	b.ReduceSum(r.v.mean, x, r.rowSum(k), inv)
	b.Broadcast(gpu.BinSub, r.v.tmp, x, r.v.mean, r.perRow(k)) // x − mean
	b.Mul(r.v.xhat, r.v.tmp, r.v.tmp)
	b.ReduceSum(r.v.rstd, r.v.xhat, r.rowSum(k), inv) // the biased variance
	b.Broadcast(gpu.BinAdd, r.v.rstd, r.v.rstd, r.epsBuf, gpu.BroadcastGeom{Dims: []int{k}, A: []int{1}, B: []int{0}})
	b.Activate(gpu.Act{Kind: gpu.KindPow, Alpha: -0.5}, r.v.rstd, r.v.rstd)
	b.Broadcast(gpu.BinMul, r.v.xhat, r.v.tmp, r.v.rstd, r.perRow(k))
}

// backward sets dx from g = dy·scale, which the caller has put in v.tmp.
func (r *rowNorm) backward(p *Pass, dx gpu.Buffer) {
	b, k := p.B, p.N*r.rows
	inv := 1 / float32(r.size)
	g := r.v.tmp
	b.Mul(r.v.tmp2, g, r.v.xhat)
	b.ReduceSum(r.v.mean, r.v.tmp2, r.rowSum(k), inv) // mean(g·x̂)
	b.Broadcast(gpu.BinMul, r.v.tmp2, r.v.xhat, r.v.mean, r.perRow(k))
	b.Axpy(-1, r.v.tmp2, g)                    // g − x̂·mean(g·x̂)
	b.ReduceSum(r.v.mean, g, r.rowSum(k), inv) // mean(g): the subtracted term's mean is 0
	b.Broadcast(gpu.BinSub, g, g, r.v.mean, r.perRow(k))
	b.Broadcast(gpu.BinMul, dx, g, r.v.rstd, r.perRow(k))
}

// LayerNorm normalises each sample over its trailing per-sample axes
// Axis.. of the logical dims Dims (PyTorch's nn.LayerNorm over
// normalized_shape = Dims[Axis:], ONNX's LayerNormalization), then scales
// and shifts by the learnable weight and bias of that shape (init 1 and 0,
// as PyTorch): y = x̂·weight + bias (rowNorm). Axes count from 0 after the
// batch. dweight = Σ dy·x̂ and dbias = Σ dy over the batch and the leading
// axes.
type LayerNorm struct {
	Base
	Dims []int
	Axis int
	Eps  float32

	n rowNorm
}

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
	l.n = rowNorm{rows: prod(l.Dims[:l.Axis]), size: prod(l.Dims[l.Axis:]), eps: l.Eps}
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
	l.n.bind(b)
}

// Resize implements Layer.
func (l *LayerNorm) Resize(b gpu.Backend, n int) { l.n.resize(b, n) }

// Workspace implements Layer.
func (l *LayerNorm) Workspace(n int) int { return l.n.workspace(n) }

// perCol broadcasts the affine parameters (one per element of a row) over k rows.
func (l *LayerNorm) perCol(k int) gpu.BroadcastGeom {
	return gpu.BroadcastGeom{Dims: []int{k, l.n.size}, A: []int{l.n.size, 1}, B: []int{0, 1}}
}

// Forward implements Layer.
func (l *LayerNorm) Forward(p *Pass, out gpu.Buffer, in []gpu.Buffer) {
	l.n.normalize(p, in[0])
	k := p.N * l.n.rows
	p.B.Broadcast(gpu.BinMul, out, l.n.v.xhat, l.P[0], l.perCol(k))
	p.B.Broadcast(gpu.BinAdd, out, out, l.P[1], l.perCol(k))
}

// BackwardReads implements BackwardReader: nothing (x̂ and 1/σ are kept).
func (*LayerNorm) BackwardReads(bool) (in, out bool) { return false, false }

// Backward implements Layer.
func (l *LayerNorm) Backward(p *Pass, din []gpu.Buffer, dout gpu.Buffer, _ []gpu.Buffer, _ gpu.Buffer, paramGrads bool) {
	b, k := p.B, p.N*l.n.rows
	l.n.views(p)
	colSum := gpu.ReduceGeom{In: []int{k, l.n.size}, Out: []int{1, l.n.size}}
	if paramGrads {
		b.Mul(l.n.v.tmp, dout, l.n.v.xhat)
		b.ReduceSum(l.G[0], l.n.v.tmp, colSum, 1)
		b.ReduceSum(l.G[1], dout, colSum, 1)
	}
	if din[0] == nil {
		return
	}
	b.Broadcast(gpu.BinMul, l.n.v.tmp, dout, l.P[0], l.perCol(k))
	l.n.backward(p, din[0])
}

// GroupNorm normalises each sample's channels in Groups groups, each group
// over its channels and positions together, then scales and shifts each
// channel by a learnable weight and bias (init 1 and 0): PyTorch's
// nn.GroupNorm, and with Groups equal to the channels nn.InstanceNorm2d
// (affine=True) and ONNX's InstanceNormalization. y = x̂·weight[c] +
// bias[c] (rowNorm over N·Groups rows of C/Groups·H·W elements). The
// input is read with the logical per-sample dims Dims (channels first; nil:
// the input's C×H×W), as the structural layers read theirs.
type GroupNorm struct {
	Base
	Groups int
	Eps    float32
	Dims   []int

	c, hw int
	n     rowNorm
}

// NewGroupNorm returns a group norm of groups groups (the channels: an
// instance norm) of inputs read as dims (nil: C×H×W).
func NewGroupNorm(name string, groups int, eps float32, dims []int) *GroupNorm {
	return &GroupNorm{Base: Base{LayerName: name}, Groups: groups, Eps: eps, Dims: dims}
}

// Kind implements Layer.
func (*GroupNorm) Kind() string { return "groupnorm" }

// Setup implements Layer: Groups must divide the channels.
func (l *GroupNorm) Setup(in []Shape) (Shape, error) {
	s, err := one(l.Kind(), in)
	if err != nil {
		return Shape{}, err
	}
	l.c, l.hw = s.C, s.H*s.W
	if l.Dims != nil {
		if err := checkDims(l.Kind(), l.LayerName, l.Dims, s); err != nil {
			return Shape{}, err
		}
		l.c, l.hw = l.Dims[0], prod(l.Dims[1:])
	}
	if l.Groups <= 0 || l.c%l.Groups != 0 {
		return Shape{}, fmt.Errorf("solver: groupnorm %s: %d groups for %d channels (want a divisor)", l.LayerName, l.Groups, l.c)
	}
	if !(l.Eps > 0) {
		return Shape{}, fmt.Errorf("solver: groupnorm %s: epsilon %g, want > 0", l.LayerName, l.Eps)
	}
	l.n = rowNorm{rows: l.Groups, size: l.c / l.Groups * l.hw, eps: l.Eps}
	return s, nil
}

// Params implements Layer: weight and bias per channel.
func (l *GroupNorm) Params() []ParamSpec {
	return []ParamSpec{{Name: "weight", Dims: []int{l.c}, Init: InitOnes}, {Name: "bias", Dims: []int{l.c}, Init: InitZeros}}
}

// Bind implements Layer.
func (l *GroupNorm) Bind(b gpu.Backend, params, grads, state []gpu.Buffer) {
	l.Base.Bind(b, params, grads, state)
	l.n.bind(b)
}

// Resize implements Layer.
func (l *GroupNorm) Resize(b gpu.Backend, n int) { l.n.resize(b, n) }

// Workspace implements Layer.
func (l *GroupNorm) Workspace(n int) int { return l.n.workspace(n) }

// perChan broadcasts a per-channel parameter over n samples' N×C×HW.
func (l *GroupNorm) perChan(n int) gpu.BroadcastGeom {
	return gpu.BroadcastGeom{Dims: []int{n, l.c, l.hw}, A: []int{l.c * l.hw, l.hw, 1}, B: []int{0, 1, 0}}
}

// Forward implements Layer.
func (l *GroupNorm) Forward(p *Pass, out gpu.Buffer, in []gpu.Buffer) {
	l.n.normalize(p, in[0])
	p.B.Broadcast(gpu.BinMul, out, l.n.v.xhat, l.P[0], l.perChan(p.N))
	p.B.Broadcast(gpu.BinAdd, out, out, l.P[1], l.perChan(p.N))
}

// BackwardReads implements BackwardReader: nothing (x̂ and 1/σ are kept).
func (*GroupNorm) BackwardReads(bool) (in, out bool) { return false, false }

// Backward implements Layer.
func (l *GroupNorm) Backward(p *Pass, din []gpu.Buffer, dout gpu.Buffer, _ []gpu.Buffer, _ gpu.Buffer, paramGrads bool) {
	b := p.B
	l.n.views(p)
	chanSum := gpu.ReduceGeom{In: []int{p.N, l.c, l.hw}, Out: []int{1, l.c, 1}}
	if paramGrads {
		b.Mul(l.n.v.tmp, dout, l.n.v.xhat)
		b.ReduceSum(l.G[0], l.n.v.tmp, chanSum, 1)
		b.ReduceSum(l.G[1], dout, chanSum, 1)
	}
	if din[0] == nil {
		return
	}
	b.Broadcast(gpu.BinMul, l.n.v.tmp, dout, l.P[0], l.perChan(p.N))
	l.n.backward(p, din[0])
}

// scratch is the per-batch buffers resize allocates for n samples: x̂, 1/σ
// and the mean.
func (r *rowNorm) scratch(n int) int { return n*r.rows*r.size + 2*n*r.rows }

// scratch implements batchScratcher.
func (l *LayerNorm) scratch(n int) int { return l.n.scratch(n) }

// scratch implements batchScratcher.
func (l *GroupNorm) scratch(n int) int { return l.n.scratch(n) }
