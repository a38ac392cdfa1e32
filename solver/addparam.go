package solver

import "github.com/cotrain/cotrain/gpu"

// AddParam adds a learned tensor of the input's per-sample dims to every
// sample: a vision transformer's position embedding (x + pos_embedding,
// an nn.Parameter of 1×T×D), which an ONNX file holds as the constant of an
// Add. The parameter ("weight") has Dims.
//
// Forward is one broadcast Add (the parameter's batch stride 0); Backward
// passes dout to the input and sums it over the batch for the parameter
// (ReduceSum), deterministic on every backend.
type AddParam struct {
	Base
	Dims []int

	fwd gpu.BroadcastGeom
	red gpu.ReduceGeom
}

var _ Layer = (*AddParam)(nil)

// NewAddParam returns the addition of a learned tensor of per-sample dims dims.
func NewAddParam(name string, dims []int) *AddParam {
	return &AddParam{Base: Base{LayerName: name}, Dims: dims}
}

// Kind implements Layer.
func (*AddParam) Kind() string { return "addparam" }

// Setup implements Layer.
func (l *AddParam) Setup(in []Shape) (Shape, error) {
	s, err := one("addparam", in)
	if err != nil {
		return Shape{}, err
	}
	if err := checkDims("addparam", l.LayerName, l.Dims, s); err != nil {
		return Shape{}, err
	}
	size := prod(l.Dims)
	l.fwd = gpu.BroadcastGeom{Dims: []int{1, size}, A: []int{size, 1}, B: []int{0, 1}}
	l.red = gpu.ReduceGeom{In: []int{1, size}, Out: []int{1, size}}
	return s, nil
}

// Params implements Layer: the added tensor.
func (l *AddParam) Params() []ParamSpec {
	return []ParamSpec{{Name: "weight", Dims: l.Dims, FanIn: l.Dims[len(l.Dims)-1]}}
}

// Forward implements Layer: out = x + weight for every sample.
func (l *AddParam) Forward(p *Pass, out gpu.Buffer, in []gpu.Buffer) {
	l.fwd.Dims[0] = p.N
	p.B.Broadcast(gpu.BinAdd, out, in[0], l.P[0], l.fwd)
}

// BackwardReads implements BackwardReader: nothing.
func (*AddParam) BackwardReads(bool) (in, out bool) { return false, false }

// Backward implements Layer: dx = dout; dweight = Σ over the batch of dout.
func (l *AddParam) Backward(p *Pass, din []gpu.Buffer, dout gpu.Buffer, _ []gpu.Buffer, _ gpu.Buffer, paramGrads bool) {
	if din[0] != nil {
		p.B.Copy(din[0], dout)
	}
	if paramGrads {
		l.red.In[0] = p.N
		p.B.ReduceSum(l.G[0], dout, l.red, 1)
	}
}
