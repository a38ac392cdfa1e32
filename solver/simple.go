package solver

import (
	"fmt"
	"slices"

	"github.com/cotrain/cotrain/gpu"
)

// Linear is a fully connected layer: y = x·Wᵀ + b, W is out×in (PyTorch's nn.Linear).
// The input is flattened per sample, unless Dims gives its logical
// per-sample dims (two or more): then the layer applies to the last of them
// at every position of the others, as nn.Linear does to a tensor of any
// rank (a transformer's tokens, ConvNeXt's channels-last pixels), and the
// output's dims are Dims with the last replaced by Out. Rows of all samples
// are one matrix, so each pass is one Gemm of N·rows rows.
type Linear struct {
	Base
	In, Out int
	NoBias  bool
	Dims    []int // logical per-sample input dims; nil: flattened

	rows int // positions per sample (1 when flattened)

	// biasDone: the fused activation's Backward computed the bias
	// gradient of this pass (fuse.go); the next Backward skips it.
	biasDone bool
}

// NewLinear returns a linear layer with out units; the input size comes from Setup.
func NewLinear(name string, out int) *Linear { return &Linear{Base: Base{LayerName: name}, Out: out} }

// Kind implements Layer.
func (*Linear) Kind() string { return "linear" }

// Setup implements Layer.
func (l *Linear) Setup(in []Shape) (Shape, error) {
	s, err := one("linear", in)
	if err != nil {
		return Shape{}, err
	}
	if l.Out <= 0 {
		return Shape{}, fmt.Errorf("solver: linear %s: %d outputs", l.LayerName, l.Out)
	}
	l.In, l.rows = s.Size(), 1
	if len(l.Dims) < 2 {
		return Shape{l.Out, 1, 1}, nil
	}
	if err := checkDims("linear", l.LayerName, l.Dims, s); err != nil {
		return Shape{}, err
	}
	r := len(l.Dims) - 1
	l.In, l.rows = l.Dims[r], prod(l.Dims[:r])
	out := l.OutDims()
	if err := boundedDims("linear", l.LayerName, "output dimensions", out); err != nil {
		return Shape{}, err
	}
	return DimsShape(out), nil
}

// OutDims returns the output's logical per-sample dims: [Out] for a
// flattened input, else Dims with the last replaced by Out.
func (l *Linear) OutDims() []int {
	if len(l.Dims) < 2 {
		return []int{l.Out}
	}
	out := slices.Clone(l.Dims)
	out[len(out)-1] = l.Out
	return out
}

// Rowwise reports whether the layer applies to the last of several
// per-sample dims (Dims) rather than to the flattened sample.
func (l *Linear) Rowwise() bool { return len(l.Dims) >= 2 }

// Params implements Layer.
func (l *Linear) Params() []ParamSpec {
	ps := []ParamSpec{{Name: "weight", Dims: []int{l.Out, l.In}, FanIn: l.In}}
	if !l.NoBias {
		ps = append(ps, ParamSpec{Name: "bias", Dims: []int{l.Out}, FanIn: l.In})
	}
	return ps
}

// Forward implements Layer. x: (N·rows)×In, y: (N·rows)×Out.
func (l *Linear) Forward(p *Pass, out gpu.Buffer, in []gpu.Buffer) {
	m := p.N * l.rows
	p.B.Gemm(false, true, m, l.Out, l.In, 1, in[0], l.P[0], 0, out)
	if !l.NoBias {
		p.B.AddBias(out, l.P[1], m, l.Out, 1)
	}
}

// forwardAct implements biasActLayer: the product, the bias and a through
// f (on OpenCL in the product's own store).
func (l *Linear) forwardAct(p *Pass, out gpu.Buffer, in []gpu.Buffer, f gpu.ActFuser, a gpu.Act) {
	var bias gpu.Buffer
	if !l.NoBias {
		bias = l.P[1]
	}
	f.LinearForwardAct(a, out, in[0], l.P[0], bias, p.N, l.In, l.Out)
}

// biasOut implements biasActLayer: Out channels of one position.
func (l *Linear) biasOut() (gpu.Buffer, int, int) {
	if l.NoBias {
		return nil, l.Out, 1
	}
	return l.G[1], l.Out, 1
}

// biasGradDone implements biasActLayer.
func (l *Linear) biasGradDone() { l.biasDone = true }

// BackwardReads implements BackwardReader: x only for dW.
func (*Linear) BackwardReads(paramGrads bool) (in, out bool) { return paramGrads, false }

// Backward implements Layer. dx = dy·W; dW = dyᵀ·x; db = Σ dy.
func (l *Linear) Backward(p *Pass, din []gpu.Buffer, dout gpu.Buffer, in []gpu.Buffer, _ gpu.Buffer, paramGrads bool) {
	biasDone := l.biasDone
	l.biasDone = false
	m := p.N * l.rows
	if din[0] != nil {
		p.B.Gemm(false, false, m, l.In, l.Out, 1, dout, l.P[0], 0, din[0])
	}
	if paramGrads {
		p.B.Gemm(true, false, l.Out, l.In, m, 1, dout, in[0], 0, l.G[0])
		if !l.NoBias && !biasDone {
			p.B.BiasGrad(l.G[1], dout, m, l.Out, 1)
		}
	}
}

// Activation applies an elementwise activation (gpu.Act: ReLU, ReLU6,
// Sigmoid, HardSigmoid, HardSwish, Tanh, LeakyReLU, Clip).
type Activation struct {
	Base
	Act gpu.Act
}

// NewActivation returns a layer applying a; Setup refuses an invalid a.
func NewActivation(name string, a gpu.Act) *Activation {
	return &Activation{Base: Base{LayerName: name}, Act: a}
}

// NewReLU returns a ReLU layer.
func NewReLU(name string) *Activation { return NewActivation(name, gpu.ReLU) }

// NewReLU6 returns a ReLU6 layer (MobileNet's clipped ReLU).
func NewReLU6(name string) *Activation { return NewActivation(name, gpu.ReLU6) }

// Kind implements Layer.
func (a *Activation) Kind() string { return a.Act.String() }

// Setup implements Layer.
func (a *Activation) Setup(in []Shape) (Shape, error) {
	if err := a.Act.Validate(); err != nil {
		return Shape{}, fmt.Errorf("solver: %s: %w", a.LayerName, err)
	}
	return one(a.Kind(), in)
}

// Forward implements Layer.
func (a *Activation) Forward(p *Pass, out gpu.Buffer, in []gpu.Buffer) {
	p.B.Activate(a.Act, out, in[0])
}

// BackwardReads implements BackwardReader: the output where the derivative
// is a function of it (gpu.Act.FromOutput), else the input.
func (a *Activation) BackwardReads(bool) (in, out bool) {
	fromOut := a.Act.FromOutput()
	return !fromOut, fromOut
}

// Backward implements Layer. Where it can (gpu.Act.FromOutput), the
// derivative is taken at the output y instead of the input x, which gives
// the same bits: ReLU's gradient passes where x > 0, that is where
// y = max(x, 0) > 0; ReLU6's where 0 < x < 6, that is where
// 0 < y = min(max(x, 0), 6) < 6 (NaN passes neither); sigmoid's and tanh's
// are PyTorch's formulas in y. So the network need not keep x, which for
// conv, batch norm, ReLU is the batch norm's output, read by nothing else in
// Backward (PyTorch's inplace=True saves the same memory). HardSwish reads x.
func (a *Activation) Backward(p *Pass, din []gpu.Buffer, dout gpu.Buffer, in []gpu.Buffer, out gpu.Buffer, _ bool) {
	if din[0] == nil {
		return
	}
	t := out
	if !a.Act.FromOutput() {
		t = in[0]
	}
	p.B.ActivateBackward(a.Act, din[0], dout, t)
}

// Softmax is the softmax over the per-sample axes First..Last taken
// together, of the input read with logical per-sample dims Dims (as the
// structural layers read theirs, shape_ops.go; nil is the input's C×H×W)
// and axes counted from 0 after the batch. ONNX's Softmax at opset 13 and
// later is one axis (First == Last); before opset 13 it is the input
// flattened to 2-D at the axis (Last the last axis). Over the channels of
// an image First = Last = 0, and so over a vector's classes.
type Softmax struct {
	Base
	Dims        []int
	First, Last int

	dims            []int // Dims, or the input's C×H×W, from Setup
	outer, c, inner int   // per sample, from Setup
}

// InDims returns the logical per-sample dims the layer reads its input
// with: Dims, or the input's C×H×W when Dims is nil. Valid after Setup.
func (s *Softmax) InDims() []int { return s.dims }

// NewSoftmax returns a softmax over axes first..last of dims (nil: C×H×W).
func NewSoftmax(name string, dims []int, first, last int) *Softmax {
	return &Softmax{Base: Base{LayerName: name}, Dims: dims, First: first, Last: last}
}

// Kind implements Layer.
func (*Softmax) Kind() string { return "softmax" }

// Setup implements Layer.
func (s *Softmax) Setup(in []Shape) (Shape, error) {
	x, err := one("softmax", in)
	if err != nil {
		return Shape{}, err
	}
	dims := s.Dims
	if dims == nil {
		dims = []int{x.C, x.H, x.W}
	} else if err := checkDims("softmax", s.LayerName, dims, x); err != nil {
		return Shape{}, err
	}
	if s.First < 0 || s.Last >= len(dims) || s.First > s.Last {
		return Shape{}, fmt.Errorf("solver: softmax %s: axes %d..%d of dims %v, want 0 <= first <= last < %d",
			s.LayerName, s.First, s.Last, dims, len(dims))
	}
	s.dims = dims
	s.outer, s.c, s.inner = 1, 1, 1
	for i, d := range dims {
		switch {
		case i < s.First:
			s.outer *= d
		case i <= s.Last:
			s.c *= d
		default:
			s.inner *= d
		}
	}
	return x, nil
}

// Forward implements Layer.
func (s *Softmax) Forward(p *Pass, out gpu.Buffer, in []gpu.Buffer) {
	p.B.Softmax(out, in[0], p.N*s.outer, s.c, s.inner)
}

// BackwardReads implements BackwardReader: the output only.
func (*Softmax) BackwardReads(bool) (in, out bool) { return false, true }

// Backward implements Layer: dx = y·(dy − Σ dy·y) over the softmax's axes.
func (s *Softmax) Backward(p *Pass, din []gpu.Buffer, dout gpu.Buffer, _ []gpu.Buffer, out gpu.Buffer, _ bool) {
	if din[0] != nil {
		p.B.SoftmaxBackward(din[0], dout, out, p.N*s.outer, s.c, s.inner)
	}
}

// Flatten turns C×H×W into (C·H·W)×1×1. The memory layout is unchanged.
type Flatten struct{ Base }

// NewFlatten returns a flatten layer.
func NewFlatten(name string) *Flatten { return &Flatten{Base{LayerName: name}} }

// Kind implements Layer.
func (*Flatten) Kind() string { return "flatten" }

// Setup implements Layer.
func (f *Flatten) Setup(in []Shape) (Shape, error) {
	s, err := one("flatten", in)
	return Shape{s.Size(), 1, 1}, err
}

// BackwardReads implements BackwardReader: nothing.
func (*Flatten) BackwardReads(bool) (in, out bool) { return false, false }

// Forward implements Layer.
func (*Flatten) Forward(p *Pass, out gpu.Buffer, in []gpu.Buffer) { p.B.Copy(out, in[0]) }

// Backward implements Layer.
func (*Flatten) Backward(p *Pass, din []gpu.Buffer, dout gpu.Buffer, _ []gpu.Buffer, _ gpu.Buffer, _ bool) {
	if din[0] != nil {
		p.B.Copy(din[0], dout)
	}
}
