package solver

import (
	"fmt"
	"slices"

	"github.com/cotrain/cotrain/gpu"
)

// ScaleParam multiplies its input by a learned tensor that broadcasts over
// it: ConvNeXt's layer scale γ (an nn.Parameter of C×1×1 times N×C×H×W),
// which an ONNX file holds as the constant of a Mul. Dims are the input's
// per-sample dims and Scale the parameter's ("weight"), of the same rank,
// each axis equal to the input's or 1.
//
// Forward is one broadcast Mul; Backward is dx = dout·γ (broadcast) and
// dγ = Σ dout·x over the batch and the broadcast axes (a product into the
// workspace, then ReduceSum), deterministic on every backend.
type ScaleParam struct {
	Base
	Dims, Scale []int

	fwd   gpu.BroadcastGeom // x by γ
	prod  gpu.BroadcastGeom // dout by x, both whole
	red   gpu.ReduceGeom    // the products summed to γ's dims
	tmp   gpu.Buffer
	wsLen int
}

var _ Layer = (*ScaleParam)(nil)

// NewScaleParam returns the product of an input of per-sample dims dims
// and a learned tensor of dims scale.
func NewScaleParam(name string, dims, scale []int) *ScaleParam {
	return &ScaleParam{Base: Base{LayerName: name}, Dims: dims, Scale: scale}
}

// Kind implements Layer.
func (*ScaleParam) Kind() string { return "scaleparam" }

// Setup implements Layer.
func (l *ScaleParam) Setup(in []Shape) (Shape, error) {
	s, err := one("scaleparam", in)
	if err != nil {
		return Shape{}, err
	}
	if err := checkDims("scaleparam", l.LayerName, l.Dims, s); err != nil {
		return Shape{}, err
	}
	if err := boundedDims("scaleparam", l.LayerName, "scale dims", l.Scale); err != nil {
		return Shape{}, err
	}
	if len(l.Scale) != len(l.Dims) {
		return Shape{}, fmt.Errorf("solver: scaleparam %s: scale dims %v for input dims %v (the same rank)", l.LayerName, l.Scale, l.Dims)
	}
	for k, d := range l.Scale {
		if d != 1 && d != l.Dims[k] {
			return Shape{}, fmt.Errorf("solver: scaleparam %s: scale dims %v do not broadcast to %v", l.LayerName, l.Scale, l.Dims)
		}
	}
	dims := batched(1, l.Dims)
	whole := gpu.ContiguousStrides(dims)
	l.fwd = gpu.BroadcastGeom{Dims: dims, A: whole, B: stridesOf(l.Scale, l.Dims, true)}
	l.prod = gpu.BroadcastGeom{Dims: slices.Clone(dims), A: whole, B: whole}
	l.red = gpu.ReduceGeom{In: slices.Clone(dims), Out: batched(1, l.Scale)}
	return s, nil
}

// Params implements Layer: the scale.
func (l *ScaleParam) Params() []ParamSpec {
	return []ParamSpec{{Name: "weight", Dims: l.Scale, FanIn: 1}}
}

// Workspace implements Layer: the products dout·x of a batch.
func (l *ScaleParam) Workspace(n int) int { return n * prod(l.Dims) }

// Forward implements Layer: out = x·γ.
func (l *ScaleParam) Forward(p *Pass, out gpu.Buffer, in []gpu.Buffer) {
	l.fwd.Dims[0] = p.N
	p.B.Broadcast(gpu.BinMul, out, in[0], l.P[0], l.fwd)
}

// BackwardReads implements BackwardReader: the input, for γ's gradient.
func (*ScaleParam) BackwardReads(paramGrads bool) (in, out bool) { return paramGrads, false }

// Backward implements Layer.
func (l *ScaleParam) Backward(p *Pass, din []gpu.Buffer, dout gpu.Buffer, in []gpu.Buffer, _ gpu.Buffer, paramGrads bool) {
	n := p.N
	l.fwd.Dims[0], l.prod.Dims[0], l.red.In[0] = n, n, n
	if din[0] != nil {
		p.B.Broadcast(gpu.BinMul, din[0], dout, l.P[0], l.fwd)
	}
	if !paramGrads {
		return
	}
	w := l.Workspace(n)
	if l.tmp == nil || l.tmp.Len() != w || l.wsLen != p.WS.Len() {
		l.tmp, l.wsLen = p.B.View(p.WS, 0, w), p.WS.Len()
	}
	p.B.Broadcast(gpu.BinMul, l.tmp, dout, in[0], l.prod)
	p.B.ReduceSum(l.G[0], l.tmp, l.red, 1)
}
