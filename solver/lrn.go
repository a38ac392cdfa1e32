package solver

import (
	"fmt"
	"math"

	"github.com/cotrain/cotrain/gpu"
)

// LRN is a local response normalization across channels (ONNX LRN,
// PyTorch nn.LocalResponseNorm; AlexNet's, CaffeNet's and GoogLeNet's
// Caffe layers): y = x · (Bias + Alpha/Size · Σ x²)^-Beta, the sum over
// Size neighbouring channels (gpu.LRNGeom). It has no parameters.
type LRN struct {
	Base
	Size              int
	Alpha, Beta, Bias float32

	c, hw int // per sample, from Setup
}

var _ Layer = (*LRN)(nil)

// NewLRN returns a local response normalization layer.
func NewLRN(name string, size int, alpha, beta, bias float32) *LRN {
	return &LRN{Base: Base{LayerName: name}, Size: size, Alpha: alpha, Beta: beta, Bias: bias}
}

// Kind implements Layer.
func (*LRN) Kind() string { return "lrn" }

// Setup implements Layer: N×C×H×W (or N×F, channels F) in, the same out.
// The size must be positive and the bias positive and finite, so that
// the power is defined everywhere.
func (l *LRN) Setup(in []Shape) (Shape, error) {
	x, err := one("lrn", in)
	if err != nil {
		return Shape{}, err
	}
	finite := func(v float32) bool { return !math.IsNaN(float64(v)) && !math.IsInf(float64(v), 0) }
	if l.Size <= 0 || !(l.Bias > 0) || !finite(l.Bias) || !finite(l.Alpha) || !finite(l.Beta) {
		return Shape{}, fmt.Errorf("solver: lrn %s: size %d, alpha %g, beta %g, bias %g: want a positive size and a positive, finite bias",
			l.LayerName, l.Size, l.Alpha, l.Beta, l.Bias)
	}
	if x.Size() <= 0 {
		return Shape{}, fmt.Errorf("solver: lrn %s: input shape %v", l.LayerName, x)
	}
	l.c, l.hw = x.C, x.H*x.W
	return x, nil
}

func (l *LRN) geom(n int) gpu.LRNGeom {
	return gpu.LRNGeom{N: n, C: l.c, HW: l.hw, Size: l.Size, Alpha: l.Alpha, Beta: l.Beta, Bias: l.Bias}
}

// Forward implements Layer.
func (l *LRN) Forward(p *Pass, out gpu.Buffer, in []gpu.Buffer) {
	p.B.LRN(l.geom(p.N), out, in[0])
}

// BackwardReads implements BackwardReader: the input and the output.
func (*LRN) BackwardReads(bool) (in, out bool) { return true, true }

// Backward implements Layer.
func (l *LRN) Backward(p *Pass, din []gpu.Buffer, dout gpu.Buffer, in []gpu.Buffer, out gpu.Buffer, _ bool) {
	if din[0] != nil {
		p.B.LRNBackward(l.geom(p.N), din[0], dout, in[0], out)
	}
}
