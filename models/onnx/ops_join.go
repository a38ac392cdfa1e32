package onnx

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/cotrain/cotrain/internal/limits"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/models/onnx/onnxpb"
)

// Linear layers, joins, padding and shape arithmetic.

// transpose returns t's r×c float matrix transposed (c×r), scaled by alpha.
func transpose(t *tensor, alpha float32) *tensor {
	r, c := t.dims[0], t.dims[1]
	out := &tensor{name: t.name, dims: []int{c, r}, floats: make([]float32, r*c)}
	for i := range r {
		for j := range c {
			out.floats[j*r+i] = alpha * t.floats[i*c+j]
		}
	}
	return out
}

func scaled(t *tensor, alpha float32) *tensor {
	if alpha == 1 {
		return t
	}
	out := &tensor{name: t.name, dims: t.dims, floats: make([]float32, len(t.floats))}
	for i, v := range t.floats {
		out.floats[i] = alpha * v
	}
	return out
}

// gemm maps Gemm(A, B, C) = alpha·A·op(B) + beta·C with a constant B to a
// linear layer (weight out×in, PyTorch's layout: transB=1 is nn.Linear).
func (im *importer) gemm(n *onnxpb.NodeProto, a attrs) error {
	x, err := im.actView(n, 0)
	if err != nil {
		return err
	}
	if x.view != nil {
		if x, err = im.rows(x, n.GetInput()[0], "Gemm"); err != nil {
			return err
		}
	}
	w, err := im.konst(n, 1, false)
	if err != nil {
		return err
	}
	c, err := im.konst(n, 2, true)
	if err != nil {
		return err
	}
	if a.int("transA", 0) != 0 {
		return fmt.Errorf("%w: Gemm with transA=1", ErrUnsupported)
	}
	if err := floatParam(w, "weight", -1); err != nil {
		return err
	}
	if len(w.dims) != 2 {
		return fmt.Errorf("%w: Gemm weight %q has dims %v, want 2", ErrShape, w.name, w.dims)
	}
	alpha, beta := a.float("alpha", 1), a.float("beta", 1)
	if a.int("transB", 0) == 0 {
		w = transpose(w, alpha)
	} else {
		w = scaled(w, alpha)
	}
	if x.view != nil {
		// (T·N)×D rows of a view: a linear layer over the last axis.
		xd := x.ldims()
		if w.dims[1] != xd[len(xd)-1] {
			return fmt.Errorf("%w: Gemm weight %q is %v for %d input features", ErrShape, w.name, w.dims, xd[len(xd)-1])
		}
		d := models.Layer{Kind: "linear", Name: im.layerName(n, w.name), Out: w.dims[0], NoBias: c == nil, Dims: slices.Clone(xd)}
		if c != nil {
			if err := floatParam(c, "bias", d.Out); err != nil {
				return err
			}
			im.params[d.Name+".bias"] = scaled(c, beta)
		}
		im.params[d.Name+".weight"] = w
		out := slices.Clone(xd)
		out[len(out)-1] = d.Out
		v, err := im.push(d, []*value{stored(x)}, 0, out)
		if err == nil {
			im.vals[n.GetOutput()[0]] = withView(v, x.view)
		}
		return err
	}
	if w.dims[1] != x.shape.Size() {
		return fmt.Errorf("%w: Gemm weight %q is %v for %d input features", ErrShape, w.name, w.dims, x.shape.Size())
	}
	return im.linear(n, x, w, c, beta)
}

// matmul maps MatMul(A, B) with a constant B (in×out) to a linear layer
// without bias, over A's last axis (at every position of the others when A
// has more than one per-sample axis: solver.Linear's Dims); an Add of a
// constant vector that follows becomes its bias. A MatMul of two
// activations is a matmul layer (matmulActs).
func (im *importer) matmul(n *onnxpb.NodeProto) error {
	if y, err := im.get(n, 1); err == nil && y.act {
		return im.matmulActs(n)
	}
	x, err := im.actView(n, 0)
	if err != nil {
		return err
	}
	if x, err = im.rows(x, n.GetInput()[0], "MatMul"); err != nil {
		return err
	}
	w, err := im.konst(n, 1, false)
	if err != nil {
		return err
	}
	if err := floatParam(w, "weight", -1); err != nil {
		return err
	}
	xd := x.ldims()
	if len(w.dims) != 2 || w.dims[0] != xd[len(xd)-1] {
		return fmt.Errorf("%w: MatMul of per-sample dims %v (rank %d) by %v (a product of the last axis by a constant in×out matrix)",
			ErrShape, xd, x.rank, w.dims)
	}
	if len(xd) == 1 {
		return im.linear(n, x, transpose(w, 1), nil, 1)
	}
	// nn.Linear of a tensor of rank 3 or more (a transformer's tokens,
	// ConvNeXt's channels-last pixels): a linear layer applied to the last
	// axis at every position of the others.
	wt := transpose(w, 1)
	d := models.Layer{Kind: "linear", Name: im.layerName(n, wt.name), Out: wt.dims[0], NoBias: true, Dims: slices.Clone(xd)}
	im.params[d.Name+".weight"] = wt
	out := slices.Clone(xd)
	out[len(out)-1] = d.Out
	v, err := im.push(d, []*value{stored(x)}, 0, out)
	if err == nil {
		im.vals[n.GetOutput()[0]] = withView(v, x.axes())
	}
	return err
}

// matmulActs maps MatMul of two activations of per-sample dims batch…×M×K
// and batch…×K×P (the same rank, at least 2 per sample, the leading dims
// equal or 1: numpy's broadcasting) to a matmul layer (solver.MatMul).
// Operands of different ranks and 1-D operands are refused, naming the
// dims.
func (im *importer) matmulActs(n *onnxpb.NodeProto) error {
	x, err := im.actView(n, 0)
	if err != nil {
		return err
	}
	y, err := im.actView(n, 1)
	if err != nil {
		return err
	}
	if x.layer == y.layer && x.view == nil && y.view == nil {
		return fmt.Errorf("%w: MatMul of a tensor with itself", ErrUnsupported)
	}
	if x.view != nil || y.view != nil {
		return im.matmulViews(n, x, y)
	}
	xd, yd := x.ldims(), y.ldims()
	r := len(xd)
	if r < 2 || len(yd) != r || xd[r-1] != yd[r-2] {
		return fmt.Errorf("%w: MatMul of activations of per-sample dims %v and %v (batch…×M×K by batch…×K×P of one rank; "+
			"unsqueeze the smaller operand to the other's rank)", ErrUnsupported, xd, yd)
	}
	out := slices.Clone(xd)
	for i := range r - 2 {
		if xd[i] != yd[i] && xd[i] != 1 && yd[i] != 1 {
			return fmt.Errorf("%w: MatMul of activations of per-sample dims %v and %v: leading dims %d and %d neither equal nor 1",
				ErrShape, xd, yd, xd[i], yd[i])
		}
		out[i] = max(xd[i], yd[i])
	}
	out[r-1] = yd[r-1]
	d := models.Layer{Kind: "matmul", Name: im.layerName(n, ""), Dims: slices.Clone(xd), Dims2: slices.Clone(yd)}
	v, err := im.push(d, []*value{x, y}, 0, out)
	if err == nil {
		im.vals[n.GetOutput()[0]] = v
	}
	return err
}

func (im *importer) linear(n *onnxpb.NodeProto, x *value, w, bias *tensor, beta float32) error {
	d := models.Layer{Kind: "linear", Name: im.layerName(n, w.name), Out: w.dims[0], NoBias: bias == nil}
	if bias != nil {
		if err := floatParam(bias, "bias", d.Out); err != nil {
			return err
		}
		im.params[d.Name+".bias"] = scaled(bias, beta)
	}
	im.params[d.Name+".weight"] = w
	_, err := im.add(n, d, []*value{x}, 2)
	return err
}

// addOp maps Add of two activations to an add layer, and Add of a constant
// vector to the bias of the bias-less linear layer (a MatMul) before it.
func (im *importer) addOp(n *onnxpb.NodeProto) error {
	x, err := im.get(n, 0)
	if err != nil {
		return err
	}
	y, err := im.get(n, 1)
	if err != nil {
		return err
	}
	if x.konst != nil {
		x, y = y, x
	}
	if x.act && y.act {
		x, _ = im.act(n, 0)
		if _, err := im.act(n, 1); err != nil {
			return err
		}
		if x.layer == y.layer {
			return fmt.Errorf("%w: Add of a tensor to itself", ErrUnsupported)
		}
		_, err = im.add(n, models.Layer{Kind: "add", Name: im.layerName(n, "")}, []*value{x, y}, x.rank)
		return err
	}
	if !x.act || y.konst == nil {
		return fmt.Errorf("%w: Add of %q and %q (two activations, or a MatMul and its bias)", ErrUnsupported, n.GetInput()[0], n.GetInput()[1])
	}
	last := len(im.layers) - 1
	if x.layer != last || x.layer < 0 || im.layers[last].Kind != "linear" || !im.layers[last].NoBias {
		return fmt.Errorf("%w: Add of the constant %q to something other than a MatMul's output", ErrUnsupported, y.konst.name)
	}
	d := &im.layers[last]
	if err := floatParam(y.konst, "bias", d.Out); err != nil {
		return err
	}
	for name, v := range im.vals {
		if v == x && im.uses[name] > 1 {
			return fmt.Errorf("%w: the MatMul output %q is also used without its bias", ErrUnsupported, name)
		}
	}
	d.NoBias = false
	base, ok := strings.CutSuffix(y.konst.name, ".bias")
	if !ok {
		base, ok = strings.CutSuffix(y.konst.name, "_bias")
	}
	if ok && !strings.HasPrefix(y.konst.name, "onnx::") &&
		strings.HasPrefix(im.params[d.Name+".weight"].name, "onnx::") && !im.names[base] {
		// torch.onnx.export gives nn.Linear's transposed weight of a MatMul
		// a made-up name ("onnx::MatMul_85") and its bias the module's
		// ("block.3.bias", nn.MultiheadAttention's "self_attn.in_proj_bias"):
		// the layer takes the module's name ("block.3", "self_attn.in_proj"),
		// so its tensors are named as in PyTorch's state_dict.
		w := im.params[d.Name+".weight"]
		delete(im.params, d.Name+".weight")
		delete(im.names, d.Name)
		d.Name = im.unique(base)
		im.params[d.Name+".weight"] = w
	}
	im.params[d.Name+".bias"] = y.konst
	im.vals[n.GetOutput()[0]] = x
	return nil
}

// sumOp maps Sum (Caffe2's ResNet join; any number of inputs) of
// activations of one shape to an add layer; Sum of one input is that input.
func (im *importer) sumOp(n *onnxpb.NodeProto) error {
	var ins []*value
	for i := range n.GetInput() {
		v, err := im.act(n, i)
		if err != nil {
			return err
		}
		for j, w := range ins {
			if w.layer == v.layer {
				return fmt.Errorf("%w: Sum reads %q twice (inputs %d and %d)", ErrUnsupported, n.GetInput()[i], j, i)
			}
			if w.shape != v.shape || !slices.Equal(w.ldims(), v.ldims()) {
				return fmt.Errorf("%w: Sum of per-sample dims %v and %v (inputs of one shape only, no broadcasting)",
					ErrUnsupported, w.ldims(), v.ldims())
			}
		}
		ins = append(ins, v)
	}
	switch len(ins) {
	case 0:
		return fmt.Errorf("%w: Sum without inputs", ErrMalformed)
	case 1:
		im.vals[n.GetOutput()[0]] = ins[0]
		return nil
	}
	_, err := im.add(n, models.Layer{Kind: "add", Name: im.layerName(n, "")}, ins, ins[0].rank)
	return err
}

// concat joins activations along channels (axis 1), or shape vectors (axis 0).
func (im *importer) concat(n *onnxpb.NodeProto, a attrs) error {
	var ins []*value
	for i := range n.GetInput() {
		v, err := im.get(n, i)
		if err != nil {
			return err
		}
		ins = append(ins, v)
	}
	if len(ins) == 0 {
		return fmt.Errorf("%w: Concat without inputs", ErrMalformed)
	}
	if c := ins[0].konst; c != nil && !ins[0].bconst && c.floats != nil && len(ins) == 2 && ins[1].act &&
		len(c.dims) == len(ins[1].ldims())+1 && c.dims[0] == 1 {
		// A float constant whose leading 1 is the batch of an export at a
		// static batch of 1 (the dynamo exporter folds the class token's
		// expand over the batch into a 1×1×D initializer; the legacy one's
		// Expand of a shape [1 -1 -1] folds to the same): the constant for
		// every sample, as Expand over the batch gives.
		t := *c
		t.dims = c.dims[1:]
		ins[0] = &value{konst: &t, bconst: true}
	}
	if ins[0].bconst {
		// ViT's class token before the patches (views.go).
		if len(ins) != 2 || !ins[1].act {
			return fmt.Errorf("%w: Concat of a constant expanded over the batch with %d other inputs (one activation after it is read)",
				ErrUnsupported, len(ins)-1)
		}
		x, err := im.act(n, 1)
		if err != nil {
			return err
		}
		return im.prependConst(n, a, ins[0], x)
	}
	if !ins[0].act {
		var out []int64
		for i, v := range ins {
			switch {
			case v.sym != nil && !v.scalar:
				out = append(out, v.sym...)
			case v.konst != nil && v.konst.ints != nil && len(v.konst.dims) == 1:
				out = append(out, v.konst.ints...)
			default:
				return fmt.Errorf("%w: Concat input %d mixes shapes and tensors", ErrUnsupported, i)
			}
		}
		im.vals[n.GetOutput()[0]] = &value{sym: out}
		return nil
	}
	return im.concatAny(n, a, ins)
}

// padOp maps Pad. A symmetric spatial zero padding of N×C×H×W is recorded
// for the consumer to fold (Conv, AveragePool; any other consumer gets a
// pad layer, see materialize); any other zero, reflect or edge padding is a
// pad layer at once, and so is a constant padding by another value. The
// wrap mode is refused.
func (im *importer) padOp(n *onnxpb.NodeProto, a attrs) error {
	x, err := im.act(n, 0)
	if err != nil {
		return err
	}
	mode := a.str("mode")
	if mode != "" && mode != "constant" && mode != "reflect" && mode != "edge" {
		return fmt.Errorf("%w: Pad mode %s (constant zero, reflect and edge only)", ErrUnsupported, mode)
	}
	pads, value := a.ints("pads"), float64(a.float("value", 0))
	if im.opset >= 11 {
		if pads, err = im.intsInput(n, 1); err != nil {
			return err
		}
		if c, err := im.konst(n, 2, true); err != nil {
			return err
		} else if c != nil {
			value, _ = c.scalar()
		}
		if len(n.GetInput()) > 3 && n.GetInput()[3] != "" {
			// Opset 18: pads for the listed axes only (begins then ends).
			if pads, err = im.padAxes(n, pads, len(x.ldims())+1); err != nil {
				return err
			}
		}
	}
	for _, v := range pads {
		if _, err := limits.Extent("pads", max(v, -v), false); err != nil || v == math.MinInt64 {
			return fmt.Errorf("%w: Pad %v: a pad beyond ±%d", ErrMalformed, pads, limits.MaxExtent)
		}
	}
	if mode == "reflect" || mode == "edge" {
		return im.padLayer(n, x, pads, mode, 0)
	}
	if value != 0 {
		if f := float64(float32(value)); math.IsNaN(f) || math.IsInf(f, 0) {
			return fmt.Errorf("%w: Pad with value %g (a finite float32 only)", ErrUnsupported, value)
		}
		return im.padLayer(n, x, pads, "", float32(value))
	}
	if x.is1D() && len(pads) == 6 && pads[0] == 0 && pads[1] == 0 && pads[3] == 0 && pads[4] == 0 &&
		pads[2] == pads[5] && pads[2] >= 0 {
		// A symmetric zero Pad along L of N×C×L (AvgPool1d's padding, as
		// PyTorch exports it): pending, for the pool or convolution to fold.
		padded := *x
		padded.pad = [2]int{0, x.pad[1] + int(pads[2])}
		padded.padded = nil
		im.vals[n.GetOutput()[0]] = &padded
		return nil
	}
	if x.rank != 4 || len(pads) != 8 || pads[0] != 0 || pads[1] != 0 || pads[4] != 0 || pads[5] != 0 ||
		pads[2] != pads[6] || pads[3] != pads[7] || pads[2] < 0 || pads[3] < 0 {
		return im.padLayer(n, x, pads, "", 0)
	}
	padded := *x
	padded.pad = [2]int{x.pad[0] + int(pads[2]), x.pad[1] + int(pads[3])}
	padded.padded = nil
	im.vals[n.GetOutput()[0]] = &padded
	return nil
}

// padAxes expands the pads of Pad's axes input (opset 18: begins then ends
// of the listed axes, negative axes counting from the end) to pads over
// every axis of a rank-r tensor.
func (im *importer) padAxes(n *onnxpb.NodeProto, pads []int64, r int) ([]int64, error) {
	axes, err := im.intsInput(n, 3)
	if err != nil {
		return nil, err
	}
	if len(pads) != 2*len(axes) {
		return nil, fmt.Errorf("%w: Pad of %d values for axes %v", ErrShape, len(pads), axes)
	}
	full := make([]int64, 2*r)
	seen := make([]bool, r)
	for i, ax := range axes {
		k := ax
		if k < 0 {
			k += int64(r)
		}
		if k < 0 || k >= int64(r) || seen[k] {
			return nil, fmt.Errorf("%w: Pad axes %v for a rank-%d tensor", ErrShape, axes, r)
		}
		seen[k] = true
		full[k], full[int64(r)+k] = pads[i], pads[len(axes)+i]
	}
	return full, nil
}

// shapeOp computes the integer vectors of x.view(x.size(0), -1): Shape of an
// activation, Gather of one of its elements, Unsqueeze to a vector.
func (im *importer) shapeOp(n *onnxpb.NodeProto, a attrs) error {
	x, err := im.get(n, 0)
	if err != nil {
		return err
	}
	out := &value{}
	switch n.GetOpType() {
	case "Shape":
		if x.sym != nil && !x.scalar {
			// The shape of a shape vector (the class token's Expand).
			im.vals[n.GetOutput()[0]] = &value{konst: &tensor{name: n.GetOutput()[0], ints: []int64{int64(len(x.sym))}, dims: []int{1}}}
			return nil
		}
		if !x.act {
			return fmt.Errorf("%w: Shape of a constant", ErrUnsupported)
		}
		out.sym = x.logicalSizes()
		switch {
		case x.pad != [2]int{} && x.is1D(): // a pending pad along L (padOp) counts
			out.sym[2] += 2 * int64(x.pad[1])
		case x.pad != [2]int{}: // a pending spatial pad (padOp) counts
			out.sym[2] += 2 * int64(x.pad[0])
			out.sym[3] += 2 * int64(x.pad[1])
		}
		// Opset 15: start and end (negative from the end, clamped) select
		// a part of the shape.
		r := int64(len(out.sym))
		lo, hi := a.int("start", 0), a.int("end", r)
		if lo < 0 {
			lo += r
		}
		if hi < 0 {
			hi += r
		}
		lo, hi = min(max(lo, 0), r), min(max(hi, 0), r)
		out.sym = out.sym[lo:max(lo, hi)]
	case "Gather":
		idx, err := im.konst(n, 1, false)
		if err != nil {
			return err
		}
		vec := x.sym
		if vec == nil && x.konst != nil && len(x.konst.dims) == 1 {
			vec = x.konst.ints
		}
		if vec == nil || idx.ints == nil || len(idx.dims) > 1 || a.int("axis", 0) != 0 {
			return fmt.Errorf("%w: Gather other than elements of a shape", ErrUnsupported)
		}
		for _, i := range idx.ints {
			k := int(i)
			if k < 0 {
				k += len(vec)
			}
			if k < 0 || k >= len(vec) {
				return fmt.Errorf("%w: Gather index %d of a shape of %d", ErrShape, int(i), len(vec))
			}
			out.sym = append(out.sym, vec[k])
		}
		out.scalar = len(idx.dims) == 0
	case "Unsqueeze":
		axes := a.ints("axes")
		if im.opset >= 13 {
			t, err := im.konst(n, 1, false)
			if err != nil {
				return err
			}
			axes = t.ints
		}
		if !x.scalar || len(axes) != 1 || axes[0] != 0 {
			return fmt.Errorf("%w: Unsqueeze other than a shape element to a vector", ErrUnsupported)
		}
		out.sym = x.sym
	}
	im.vals[n.GetOutput()[0]] = out
	return nil
}
