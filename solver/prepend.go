package solver

import (
	"fmt"
	"slices"

	"github.com/cotrain/cotrain/gpu"
)

// Prepend places a learned tensor before its input along per-sample axis
// Axis: a vision transformer's class token, torch.cat([token.expand(N, -1,
// -1), x], dim=1), whose token is a parameter shared by every sample. Dims
// are the input's per-sample dims; the parameter ("weight") has them with
// Count along Axis, and the output has Dims[Axis]+Count there.
//
// Forward is two strided copies (the parameter with a batch stride of 0);
// Backward copies the input's part of the gradient out, and sums the
// parameter's part over the batch (a copy into the workspace, then
// ReduceSum), so both are deterministic on every backend.
type Prepend struct {
	Base
	Dims  []int
	Axis  int
	Count int

	out       []int
	tok, x    gpu.StridedGeom // parameter → output, input → output
	part      gpu.StridedGeom // the parameter's part of the output → the workspace
	red       gpu.ReduceGeom  // the workspace summed over the batch
	tmp       gpu.Buffer
	wsLen     int
	paramSize int
}

var _ Layer = (*Prepend)(nil)

// NewPrepend returns a layer placing count learned slices before an input of
// per-sample dims dims along axis.
func NewPrepend(name string, dims []int, axis, count int) *Prepend {
	return &Prepend{Base: Base{LayerName: name}, Dims: dims, Axis: axis, Count: count}
}

// Kind implements Layer.
func (*Prepend) Kind() string { return "prepend" }

// OutDims returns the per-sample output dims (after Setup).
func (l *Prepend) OutDims() []int { return l.out }

// paramDims returns the parameter's dims: Dims with Count along Axis.
func (l *Prepend) paramDims() []int {
	p := slices.Clone(l.Dims)
	p[l.Axis] = l.Count
	return p
}

// Setup implements Layer.
func (l *Prepend) Setup(in []Shape) (Shape, error) {
	s, err := one("prepend", in)
	if err != nil {
		return Shape{}, err
	}
	if err := checkDims("prepend", l.LayerName, l.Dims, s); err != nil {
		return Shape{}, err
	}
	if l.Axis < 0 || l.Axis >= len(l.Dims) || l.Count <= 0 || l.Count > maxSample {
		return Shape{}, fmt.Errorf("solver: prepend %s: %d slices along axis %d of %v", l.LayerName, l.Count, l.Axis, l.Dims)
	}
	l.out = slices.Clone(l.Dims)
	l.out[l.Axis] += l.Count
	if err := boundedDims("prepend", l.LayerName, "output dimensions", l.out); err != nil {
		return Shape{}, err
	}
	outer, inner := prod(l.Dims[:l.Axis]), prod(l.Dims[l.Axis+1:])
	d, k := l.Dims[l.Axis], l.Count
	total := d + k
	l.paramSize = outer * k * inner
	dst := []int{outer * total * inner, total * inner, 1}
	l.tok = gpu.StridedGeom{Dims: []int{1, outer, k * inner}, Dst: dst, Src: []int{0, k * inner, 1}}
	l.x = gpu.StridedGeom{Dims: []int{1, outer, d * inner}, Dst: dst, Src: []int{outer * d * inner, d * inner, 1}, DstOff: k * inner}
	l.part = gpu.StridedGeom{Dims: []int{1, outer, k * inner}, Dst: []int{l.paramSize, k * inner, 1}, Src: dst}
	l.red = gpu.ReduceGeom{In: []int{1, l.paramSize}, Out: []int{1, l.paramSize}}
	return DimsShape(l.out), nil
}

// Params implements Layer: the prepended slices.
func (l *Prepend) Params() []ParamSpec {
	return []ParamSpec{{Name: "weight", Dims: l.paramDims(), FanIn: l.Dims[len(l.Dims)-1]}}
}

// Workspace implements Layer: the parameter's part of a batch's gradient.
func (l *Prepend) Workspace(n int) int { return n * l.paramSize }

// Forward implements Layer.
func (l *Prepend) Forward(p *Pass, out gpu.Buffer, in []gpu.Buffer) {
	p.B.CopyStrided(out, l.P[0], atN(l.tok, p.N), false)
	p.B.CopyStrided(out, in[0], atN(l.x, p.N), false)
}

// BackwardReads implements BackwardReader: nothing.
func (*Prepend) BackwardReads(bool) (in, out bool) { return false, false }

// Backward implements Layer: the input's part of dout, and the parameter's
// summed over the batch.
func (l *Prepend) Backward(p *Pass, din []gpu.Buffer, dout gpu.Buffer, _ []gpu.Buffer, _ gpu.Buffer, paramGrads bool) {
	if din[0] != nil {
		p.B.CopyStrided(din[0], dout, swap(atN(l.x, p.N)), false)
	}
	if !paramGrads {
		return
	}
	w := l.Workspace(p.N)
	if l.tmp == nil || l.tmp.Len() != w || l.wsLen != p.WS.Len() {
		l.tmp, l.wsLen = p.B.View(p.WS, 0, w), p.WS.Len()
	}
	p.B.CopyStrided(l.tmp, dout, atN(l.part, p.N), false)
	l.red.In[0] = p.N
	p.B.ReduceSum(l.G[0], l.tmp, l.red, 1)
}
