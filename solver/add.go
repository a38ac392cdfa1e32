package solver

import (
	"fmt"

	"github.com/cotrain/cotrain/gpu"
)

// Add sums two or more inputs of the same shape elementwise: the join of a
// residual block (ResNet's out + identity) and ONNX's Add between two
// activations. It has no parameters.
type Add struct {
	Base
	n int // number of inputs, set by Setup
}

var _ Layer = (*Add)(nil)

// NewAdd returns an elementwise sum layer; the number of inputs comes from
// the node's Inputs (at least 2).
func NewAdd(name string) *Add { return &Add{Base: Base{LayerName: name}} }

// Kind implements Layer.
func (*Add) Kind() string { return "add" }

// Setup implements Layer: every input must have the first one's shape,
// which is also the output shape. Broadcasting is not supported.
func (l *Add) Setup(in []Shape) (Shape, error) {
	if len(in) < 2 {
		return Shape{}, fmt.Errorf("solver: add %s takes at least 2 inputs, got %d", l.LayerName, len(in))
	}
	for i, s := range in[1:] {
		if s != in[0] {
			return Shape{}, fmt.Errorf("solver: add %s: input %d is %v, input 0 is %v (no broadcasting)", l.LayerName, i+1, s, in[0])
		}
	}
	if in[0].Size() <= 0 {
		return Shape{}, fmt.Errorf("solver: add %s: input shape %v", l.LayerName, in[0])
	}
	l.n = len(in)
	return in[0], nil
}

// Forward implements Layer. out = in[0] + in[1] + ..., all N×C×H×W. The
// inputs are added in order, so the float32 rounding is that of a
// left-to-right sum (PyTorch's a + b for two inputs).
func (l *Add) Forward(p *Pass, out gpu.Buffer, in []gpu.Buffer) {
	p.B.Copy(out, in[0])
	for _, x := range in[1:] {
		p.B.Axpy(1, x, out)
	}
}

// BackwardReads implements BackwardReader: nothing.
func (*Add) BackwardReads(bool) (in, out bool) { return false, false }

// Backward implements Layer: every input's gradient is dout.
func (l *Add) Backward(p *Pass, din []gpu.Buffer, dout gpu.Buffer, _ []gpu.Buffer, _ gpu.Buffer, _ bool) {
	for _, d := range din {
		if d != nil {
			p.B.Copy(d, dout)
		}
	}
}
