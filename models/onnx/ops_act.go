package onnx

import (
	"fmt"
	"math"

	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/models/onnx/onnxpb"
)

// Activations and softmax: Sigmoid, Tanh, HardSigmoid, HardSwish,
// LeakyRelu and Clip with any bounds become activation layers (gpu.Act);
// a Softmax inside the graph becomes a softmax layer over the same axes.

// activation maps an elementwise ONNX activation with its attributes and
// their ONNX defaults (HardSigmoid alpha 0.2, beta 0.5; LeakyRelu alpha
// 0.01). HardSwish is an operator from opset 14; PyTorch's exporter writes
// x·HardSigmoid(x) (alpha 1/6) at lower opsets, which imports as a
// HardSigmoid and a Mul.
func (im *importer) activation(n *onnxpb.NodeProto, a attrs) error {
	d := models.Layer{}
	switch op := n.GetOpType(); op {
	case "Sigmoid":
		d.Kind = "sigmoid"
		if m := im.selfMul(n); m != nil {
			return im.fuse(n, m, "silu")
		}
	case "Tanh":
		d.Kind = "tanh"
	case "HardSwish":
		d.Kind = "hardswish"
	case "HardSigmoid":
		d.Kind, d.Alpha, d.Beta = "hardsigmoid", a.float("alpha", 0.2), a.float("beta", 0.5)
		if !finite(d.Alpha) || !finite(d.Beta) {
			return fmt.Errorf("%w: HardSigmoid alpha %g beta %g are not finite", ErrMalformed, d.Alpha, d.Beta)
		}
		// PyTorch's hardswish parameters (alpha 1/6, beta 0.5).
		if m := im.selfMul(n); m != nil && d.Alpha == float32(1.0/6) && d.Beta == 0.5 {
			return im.fuse(n, m, "hardswish")
		}
	case "LeakyRelu":
		d.Kind, d.Alpha = "leakyrelu", a.float("alpha", 0.01)
		if !finite(d.Alpha) {
			return fmt.Errorf("%w: LeakyRelu alpha %g is not finite", ErrMalformed, d.Alpha)
		}
	default:
		return fmt.Errorf("%w operator %s", ErrUnsupported, op) // our bug: node sent it here
	}
	return im.unary(n, d)
}

// selfMul returns the Mul node that makes the one-input activation node n
// into x·n(x), or nil: the Mul reads n's input and n's output, which nothing
// else reads. torch.onnx.export writes Hardswish as x·HardSigmoid(x) before
// opset 14 and SiLU as x·Sigmoid(x) at every opset; such a pair becomes one
// layer (fuse): no gate tensor, no Mul.
func (im *importer) selfMul(n *onnxpb.NodeProto) *onnxpb.NodeProto {
	out := n.GetOutput()[0]
	if len(n.GetInput()) != 1 || im.uses[out] != 1 || len(im.readers[out]) != 1 {
		return nil
	}
	m := im.readers[out][0]
	ins := m.GetInput()
	if m.GetOpType() != "Mul" || (m.GetDomain() != "" && m.GetDomain() != "ai.onnx") || len(ins) != 2 || len(m.GetOutput()) != 1 {
		return nil
	}
	x := n.GetInput()[0]
	if (ins[0] == x && ins[1] == out) || (ins[0] == out && ins[1] == x) {
		return m
	}
	return nil
}

// fuse maps activation node n and the Mul m that selfMul found to one layer
// of kind, named after the Mul, and skips m.
func (im *importer) fuse(n, m *onnxpb.NodeProto, kind string) error {
	x, err := im.act(n, 0)
	if err != nil {
		return err
	}
	im.fused[m] = true
	_, err = im.add(m, models.Layer{Kind: kind, Name: im.layerName(m, "")}, []*value{x}, x.rank)
	return err
}

func finite(v float32) bool { return !math.IsNaN(float64(v)) && !math.IsInf(float64(v), 0) }

// clipLayer is the general Clip: bounds that are infinite are left out of
// the description (none), NaN bounds and lo > hi are refused.
func (im *importer) clipLayer(n *onnxpb.NodeProto, lo, hi float64) error {
	if math.IsNaN(lo) || math.IsNaN(hi) || lo > hi || math.IsInf(lo, 1) || math.IsInf(hi, -1) {
		return fmt.Errorf("%w: Clip bounds [%g, %g] (want lo <= hi, neither NaN)", ErrUnsupported, lo, hi)
	}
	d := models.Layer{Kind: "clip"}
	if !math.IsInf(lo, -1) {
		v := float32(lo)
		d.Min = &v
	}
	if !math.IsInf(hi, 1) {
		v := float32(hi)
		d.Max = &v
	}
	return im.unary(n, d)
}

// softmax maps a Softmax node. The graph's final Softmax, read by nothing
// else, is dropped (the network outputs logits; training applies the
// softmax in its loss); any other becomes a softmax layer. Before opset 13
// the input is flattened to 2-D at axis (default 1) and normalised over
// everything from it; from opset 13 over the one axis (default -1).
func (im *importer) softmax(n *onnxpb.NodeProto, a attrs, outName string) error {
	x, err := im.act(n, 0)
	if err != nil {
		return err
	}
	if n.GetOutput()[0] == outName && im.uses[outName] == 1 {
		im.vals[outName] = x
		im.notes = append(im.notes, "the final Softmax was dropped: the network outputs logits "+
			"(apply a softmax to them for probabilities; training applies it in the loss)")
		return nil
	}
	dims := x.ldims()
	rank := len(dims) + 1
	def := int64(-1)
	if im.opset < 13 {
		def = 1
	}
	axis := a.int("axis", def)
	if axis < -int64(rank) || axis >= int64(rank) {
		return fmt.Errorf("%w: Softmax axis %d of a rank-%d input", ErrMalformed, axis, rank)
	}
	if axis < 0 {
		axis += int64(rank)
	}
	if axis == 0 {
		return fmt.Errorf("%w: Softmax over axis 0, the batch (samples must stay independent)", ErrUnsupported)
	}
	first, last := int(axis)-1, int(axis)-1
	if im.opset < 13 {
		last = len(dims) - 1
	}
	axes := make([]int, 0, last-first+1)
	for k := first; k <= last; k++ {
		axes = append(axes, k)
	}
	return im.unary(n, models.Layer{Kind: "softmax", Dims: dims, Axes: axes})
}
