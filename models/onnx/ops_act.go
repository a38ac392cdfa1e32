package onnx

import (
	"fmt"
	"math"
	"slices"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/models/onnx/onnxpb"
)

// Activations and softmax: every ONNX operator of gpu's operator table
// (gpu.UnaryOpONNX: Relu, Sigmoid, Tanh, HardSigmoid, HardSwish, LeakyRelu,
// ...) becomes an activation layer of the entry's kind, its parameters read
// from the attributes or constant inputs the entry names; Clip with any
// bounds (ops.go: clip) becomes a clip, relu or relu6; a Softmax inside the
// graph becomes a softmax layer over the same axes.

// activation maps node n of an operator in gpu's table (op) with its
// parameters: each from its ONNX attribute or constant scalar input, with
// the ONNX default when absent (HardSigmoid alpha 0.2, beta 0.5; LeakyRelu
// alpha 0.01); parameters the entry refuses (Act.Validate: not finite) are
// ErrMalformed. Two of PyTorch's patterns fuse: x·Sigmoid(x) is a silu,
// and x·HardSigmoid(x) with alpha 1/6 (HardSwish before opset 14) a
// hardswish.
func (im *importer) activation(n *onnxpb.NodeProto, a attrs, op gpu.UnaryOp) error {
	var v [2]float32
	for k, p := range op.Params {
		v[k] = p.Default
		switch {
		case p.ONNXAttr != "":
			v[k] = a.float(p.ONNXAttr, p.Default)
		case p.ONNXInput > 0:
			t, err := im.konst(n, p.ONNXInput, !p.Required)
			if err != nil {
				return err
			}
			if t != nil {
				s, ok := t.scalar()
				if !ok {
					return fmt.Errorf("%w: %s input %d (%q) is not a scalar", ErrShape, n.GetOpType(), p.ONNXInput, t.name)
				}
				v[k] = float32(s)
			}
		}
	}
	if op.Kind == gpu.KindGelu {
		if at, ok := a["approximate"]; ok && string(at.GetS()) != "none" {
			return fmt.Errorf("%w: Gelu with approximate=%q (the exact GELU, approximate=\"none\", is read): "+
				"use nn.GELU() without approximate='tanh'", ErrUnsupported, at.GetS())
		}
	}
	act := op.Act(v[0], v[1])
	if err := act.Validate(); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrMalformed, n.GetOpType(), err)
	}
	if x, err := im.get(n, 0); err == nil && x.konst != nil && x.konst.floats != nil && x.konst.size() <= maxFold {
		// Of a float constant (scaled_dot_product_attention's
		// 1/√d from the shape): folded with the table's own function.
		out := &tensor{name: n.GetOutput()[0], dims: x.konst.dims, floats: make([]float32, len(x.konst.floats))}
		op.Forward(act, out.floats, x.konst.floats)
		im.vals[out.name] = &value{konst: out}
		return nil
	}
	switch op.Kind {
	case gpu.KindSigmoid:
		if m := im.selfMul(n); m != nil {
			return im.fuse(n, m, "silu")
		}
	case gpu.KindHardSigmoid:
		// PyTorch's hardswish parameters (alpha 1/6, beta 0.5).
		if m := im.selfMul(n); m != nil && act.Alpha == float32(1.0/6) && act.Beta == 0.5 {
			return im.fuse(n, m, "hardswish")
		}
	}
	d := models.Layer{Kind: op.Name}
	models.DescribeAct(&d, act)
	return im.unary(n, d)
}

// prelu maps PRelu(x, slope), slope a constant: one slope for everything
// (PyTorch's nn.PReLU()) or one per channel (nn.PReLU(C): C×1×1 for an
// image, C for a vector, as ONNX broadcasts from the right). Any other
// slope shape is refused.
func (im *importer) prelu(n *onnxpb.NodeProto) error {
	x, err := im.act(n, 0)
	if err != nil {
		return err
	}
	s, err := im.konst(n, 1, false)
	if err != nil {
		return err
	}
	if s.floats == nil {
		return fmt.Errorf("%w: PRelu slope %q is not a float tensor", ErrUnsupported, s.name)
	}
	slopes := s.size()
	if slopes != 1 {
		// Aligned from the right with the input's dims, the slope's one
		// axis of more than one element must be the channel axis (1).
		ok := slopes == x.shape.C && len(s.dims) <= x.rank
		for j, d := range s.dims {
			axis := x.rank - len(s.dims) + j
			ok = ok && (d == 1 || axis == 1)
		}
		if !ok {
			return fmt.Errorf("%w: PRelu slope of dims %v for a rank-%d input with %d channels: one slope, or one per "+
				"channel (nn.PReLU(num_parameters=1 or C)), is read", ErrUnsupported, s.dims, x.rank, x.shape.C)
		}
	}
	d := models.Layer{Kind: "prelu", Name: im.layerName(n, s.name), Out: slopes}
	im.params[d.Name+".weight"] = s
	_, err = im.add(n, d, []*value{x}, x.rank)
	return err
}

// layerNorm maps LayerNormalization(x, scale, bias) over the axes from axis
// (default -1; not the batch) to a layernorm layer whose weight and bias
// are scale and bias (zeros when absent). Its optional Mean and InvStdDev
// outputs must not be used (node refuses that).
func (im *importer) layerNorm(n *onnxpb.NodeProto, a attrs) error {
	x, err := im.act(n, 0)
	if err != nil {
		return err
	}
	dims := x.ldims()
	rank := int64(len(dims) + 1)
	axis := a.int("axis", -1)
	if axis < -rank || axis >= rank {
		return fmt.Errorf("%w: LayerNormalization axis %d of a rank-%d input", ErrMalformed, axis, rank)
	}
	if axis < 0 {
		axis += rank
	}
	if axis == 0 {
		return fmt.Errorf("%w: LayerNormalization from axis 0, the batch (samples must stay independent)", ErrUnsupported)
	}
	size := 1
	for _, d := range dims[axis-1:] {
		size *= d
	}
	scale, err := im.konst(n, 1, false)
	if err != nil {
		return err
	}
	bias, err := im.konst(n, 2, true)
	if err != nil {
		return err
	}
	if bias == nil {
		bias = &tensor{name: scale.name + ".bias", dims: scale.dims, floats: make([]float32, size)}
	}
	for _, t := range []*tensor{scale, bias} {
		if t.floats == nil || t.size() != size {
			return fmt.Errorf("%w: LayerNormalization %s has dims %v, want the %d elements of the normalised dims %v",
				ErrShape, t.name, t.dims, size, dims[axis-1:])
		}
	}
	d := models.Layer{Kind: "layernorm", Name: im.layerName(n, scale.name), Dims: slices.Clone(dims), Axis: int(axis) - 1,
		Eps: a.float("epsilon", 1e-5)}
	im.params[d.Name+".weight"], im.params[d.Name+".bias"] = scale, bias
	v, err := im.push(d, []*value{x}, x.rank, d.Dims)
	if err == nil {
		im.vals[n.GetOutput()[0]] = v
	}
	return err
}

// groupNorm maps InstanceNormalization(x, scale, bias) to a groupnorm layer
// of a group per channel, and GroupNormalization(x, scale, bias) with
// num_groups to one of those groups. Scale and bias are per channel (and
// so trained), or, for GroupNormalization before opset 21, per group:
// each group's value is then given to its channels.
func (im *importer) groupNorm(n *onnxpb.NodeProto, a attrs) error {
	x, err := im.act(n, 0)
	if err != nil {
		return err
	}
	dims := x.ldims()
	if len(dims) < 2 {
		return fmt.Errorf("%w: %s of a rank-%d input (N×C×H×W or N×C×L)", ErrUnsupported, n.GetOpType(), len(dims)+1)
	}
	c := dims[0]
	groups := c
	if n.GetOpType() == "GroupNormalization" {
		g := a.int("num_groups", 0)
		if g <= 0 || int64(c)%g != 0 {
			return fmt.Errorf("%w: GroupNormalization num_groups %d for %d channels (want a divisor)", ErrMalformed, g, c)
		}
		groups = int(g)
	}
	var ts [2]*tensor
	for i := range ts {
		if ts[i], err = im.konst(n, i+1, false); err != nil {
			return err
		}
		t := ts[i]
		if t.floats != nil && t.size() == groups && groups != c && im.opset < 21 {
			per := make([]float32, 0, c) // opset 18's per-group values, given to each channel
			for _, v := range t.floats {
				for range c / groups {
					per = append(per, v)
				}
			}
			ts[i] = &tensor{name: t.name, dims: []int{c}, floats: per}
		}
		if err := floatParam(ts[i], n.GetOpType()+" input", c); err != nil {
			return err
		}
	}
	d := models.Layer{Kind: "groupnorm", Name: im.layerName(n, ts[0].name), Groups: groups, Eps: a.float("epsilon", 1e-5),
		Dims: slices.Clone(dims)}
	im.params[d.Name+".weight"], im.params[d.Name+".bias"] = ts[0], ts[1]
	v, err := im.push(d, []*value{x}, x.rank, d.Dims)
	if err == nil {
		im.vals[n.GetOutput()[0]] = v
	}
	return err
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

// softmax maps a Softmax or LogSoftmax node. The graph's final one, read
// by nothing else, is dropped (the network outputs logits; training applies
// the softmax in its loss, and the logits' argmax is the log-probabilities'
// too); any other becomes a softmax layer, followed for LogSoftmax by a log
// layer. (The log of the softmax loses what a fused log-softmax keeps only
// where a probability underflows float32, logits more than about 87 below
// their maximum.) Before opset 13 the input is flattened to 2-D at axis
// (default 1) and normalised over everything from it; from opset 13 over
// the one axis (default -1).
func (im *importer) softmax(n *onnxpb.NodeProto, a attrs, outName string) error {
	if v, err := im.get(n, 0); err == nil && v.view != nil && im.opset >= 13 && n.GetOpType() == "Softmax" &&
		(a.int("axis", -1) == -1 || a.int("axis", -1) == int64(len(v.view)-1)) {
		// Attention's weights: over the last axis of a view, row by row.
		x, err := im.rows(v, n.GetInput()[0], "Softmax")
		if err != nil {
			return err
		}
		d := x.ldims()
		s, err := im.push(models.Layer{Kind: "softmax", Name: im.layerName(n, ""), Dims: slices.Clone(d), Axes: []int{len(d) - 1}},
			[]*value{stored(x)}, 0, d)
		if err == nil {
			im.vals[n.GetOutput()[0]] = withView(s, x.axes())
		}
		return err
	}
	x, err := im.act(n, 0)
	if err != nil {
		return err
	}
	op := n.GetOpType()
	if n.GetOutput()[0] == outName && im.uses[outName] == 1 {
		im.vals[outName] = x
		im.notes = append(im.notes, "the final "+op+" was dropped: the network outputs logits "+
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
		return fmt.Errorf("%w: %s axis %d of a rank-%d input", ErrMalformed, op, axis, rank)
	}
	if axis < 0 {
		axis += int64(rank)
	}
	if axis == 0 {
		return fmt.Errorf("%w: %s over axis 0, the batch (samples must stay independent)", ErrUnsupported, op)
	}
	first, last := int(axis)-1, int(axis)-1
	if im.opset < 13 {
		last = len(dims) - 1
	}
	axes := make([]int, 0, last-first+1)
	for k := first; k <= last; k++ {
		axes = append(axes, k)
	}
	if op == "Softmax" {
		return im.unary(n, models.Layer{Kind: "softmax", Dims: dims, Axes: axes})
	}
	name := im.layerName(n, "")
	sm, err := im.push(models.Layer{Kind: "softmax", Name: name + ".softmax", Dims: dims, Axes: axes}, []*value{x}, x.rank, nil)
	if err != nil {
		return err
	}
	_, err = im.add(n, models.Layer{Kind: "log", Name: name}, []*value{sm}, sm.rank)
	return err
}
