package onnx

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/internal/limits"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/models/onnx/onnxpb"
)

// The structural operators: arithmetic with broadcasting, reductions,
// Reshape, Transpose, Split, Slice, Squeeze, Unsqueeze, Flatten (at axis 1,
// negative spellings included: any other axis mixes samples), Concat on any
// non-batch axis and Pad.
//
// Every activation value carries its logical per-sample dims (value.ldims:
// the ONNX shape without the batch axis). The structural layers take those
// dims in their configuration and see only the flat per-sample size from
// the network (solver/shape_ops.go), so a rank-5 tensor inside a channel
// shuffle costs nothing special. ONNX axes count the batch as 0; the
// layers' axes count from the first per-sample axis, so an ONNX axis a is
// a-1 there, and an operation along the batch axis is refused.

// maxConst caps a constant operand's size: it is stored in the graph
// description, whose JSON must stay under a weight file's 64 KiB string.
const maxConst = 4096

// sampleAxis turns ONNX axis a of a tensor of full rank (batch included)
// into a per-sample axis, refusing the batch axis.
func sampleAxis(a int64, rank int, op string) (int, error) {
	if a < 0 {
		a += int64(rank)
	}
	if a < 0 || a >= int64(rank) {
		return 0, fmt.Errorf("%w: %s axis %d of a rank-%d tensor", ErrShape, op, a, rank)
	}
	if a == 0 {
		return 0, fmt.Errorf("%w: %s along the batch axis", ErrUnsupported, op)
	}
	return int(a) - 1, nil
}

// intsInput returns the integer vector of input i (an initializer, a
// Constant or folded shape arithmetic), or nil when the optional input is
// absent.
func (im *importer) intsInput(n *onnxpb.NodeProto, i int) ([]int64, error) {
	if i >= len(n.GetInput()) || n.GetInput()[i] == "" {
		return nil, nil
	}
	v, err := im.get(n, i)
	if err != nil {
		return nil, err
	}
	switch {
	case v.konst != nil && v.konst.ints != nil:
		return v.konst.ints, nil
	case v.sym != nil && !hasBatch(v.sym):
		return v.sym, nil
	}
	return nil, fmt.Errorf("%w: input %q must be a constant integer vector", ErrUnsupported, n.GetInput()[i])
}

// arith maps Add, Sub, Mul and Div. An Add of two activations of the same
// shape is an add layer and an Add of a constant to a MatMul the linear
// layer's bias (addOp); everything else is a binary layer with numpy
// broadcasting, between two activations or an activation and a constant.
// Integer shape arithmetic (x.size(1) // 2) is folded.
func (im *importer) arith(n *onnxpb.NodeProto) error {
	x, err := im.get(n, 0)
	if err != nil {
		return err
	}
	y, err := im.get(n, 1)
	if err != nil {
		return err
	}
	op, _ := gpu.ParseBinOp(n.GetOpType()) // node calls arith for the binary table's operators only
	if !x.act && !y.act {
		return im.foldArith(n, op, x, y)
	}
	if x.act && y.act {
		if x, err = im.act(n, 0); err != nil {
			return err
		}
		if y, err = im.act(n, 1); err != nil {
			return err
		}
		if x.layer == y.layer {
			return fmt.Errorf("%w: %s of a tensor with itself", ErrUnsupported, n.GetOpType())
		}
		xd, yd := x.ldims(), y.ldims()
		if len(xd) != len(yd) {
			return fmt.Errorf("%w: %s of activations of ranks %d and %d (both have a batch axis first)",
				ErrUnsupported, n.GetOpType(), len(xd)+1, len(yd)+1)
		}
		if op == gpu.BinAdd && slices.Equal(xd, yd) {
			return im.addOp(n)
		}
		return im.binary(n, models.Layer{Kind: "binary", Op: op.String(), Dims: slices.Clone(xd), Dims2: slices.Clone(yd)}, []*value{x, y})
	}
	first := !x.act
	ai := 0
	if first {
		ai = 1
	}
	c := y.konst
	if first {
		c = x.konst
	}
	if raw, _ := im.get(n, ai); raw.view != nil && c != nil && (op == gpu.BinAdd && im.isBias(raw, c) || c.floats != nil && c.size() == 1) {
		if op == gpu.BinAdd && im.isBias(raw, c) {
			return im.addOp(n)
		}
		// A scalar on a view (attention's 1/√d): elementwise on its memory.
		d := models.Layer{Kind: "binary", Op: op.String(), Dims: slices.Clone(raw.ldims()), Dims2: slices.Repeat([]int{1}, len(raw.ldims())),
			Const: c.floats, First: first, Name: im.layerName(n, "")}
		v, err := im.push(d, []*value{stored(raw)}, 0, raw.ldims())
		if err == nil {
			im.vals[n.GetOutput()[0]] = withView(v, raw.view)
		}
		return err
	}
	a, err := im.act(n, ai)
	if err != nil {
		return err
	}
	if c == nil {
		return fmt.Errorf("%w: %s of an activation and shape arithmetic", ErrUnsupported, n.GetOpType())
	}
	if op == gpu.BinAdd && im.isBias(a, c) {
		return im.addOp(n)
	}
	if err := floatParam(c, "constant operand", -1); err != nil {
		return err
	}
	if op == gpu.BinAdd && im.isParam(a, c) {
		// A learned tensor of the sample's shape (ViT's position
		// embedding): trained, in the weight file (views.go).
		return im.addParam(n, a, c)
	}
	if op == gpu.BinMul && im.isScale(a, c) {
		// A learned scale (ConvNeXt's layer scale γ): trained.
		return im.scaleParam(n, a, c)
	}
	if len(c.floats) > maxConst {
		return fmt.Errorf("%w: constant operand %q of %d values (at most %d)", ErrUnsupported, c.name, len(c.floats), maxConst)
	}
	ad := a.ldims()
	if len(c.dims) > len(ad)+1 {
		return fmt.Errorf("%w: constant %q of dims %v broadcasts an activation of rank %d to a higher rank", ErrUnsupported, c.name, c.dims, len(ad)+1)
	}
	full := slices.Repeat([]int{1}, len(ad)+1-len(c.dims))
	full = append(full, c.dims...)
	if full[0] != 1 {
		return fmt.Errorf("%w: constant %q of dims %v has a batch axis of %d", ErrUnsupported, c.name, c.dims, full[0])
	}
	d := models.Layer{Kind: "binary", Op: op.String(), Dims: slices.Clone(ad), Dims2: full[1:], Const: c.floats, First: first}
	return im.binary(n, d, []*value{a})
}

// isBias reports whether the constant c added to a is the bias of the
// bias-less linear layer (a MatMul) that computed a: Out values, along the
// last axis for a linear layer of several dims (Dims).
func (im *importer) isBias(a *value, c *tensor) bool {
	last := len(im.layers) - 1
	if last < 0 || a.layer != last || im.layers[last].Kind != "linear" || !im.layers[last].NoBias ||
		c.floats == nil || c.size() != im.layers[last].Out {
		return false
	}
	return len(im.layers[last].Dims) < 2 || len(c.dims) == 0 || c.dims[len(c.dims)-1] == im.layers[last].Out
}

// binary adds a binary layer after checking that its operands broadcast.
func (im *importer) binary(n *onnxpb.NodeProto, d models.Layer, ins []*value) error {
	out := make([]int, len(d.Dims))
	for k := range d.Dims {
		p, q := d.Dims[k], d.Dims2[k]
		if p != q && p != 1 && q != 1 {
			return fmt.Errorf("%w: %s of per-sample dims %v and %v, which do not broadcast", ErrShape, n.GetOpType(), d.Dims, d.Dims2)
		}
		out[k] = max(p, q)
	}
	d.Name = im.layerName(n, "")
	v, err := im.push(d, ins, 0, out)
	if err == nil {
		im.vals[n.GetOutput()[0]] = v
	}
	return err
}

// foldArith computes integer shape arithmetic elementwise (one side may be
// a single element). The batch size cannot take part.
func (im *importer) foldArith(n *onnxpb.NodeProto, op gpu.BinOp, x, y *value) error {
	vec := func(v *value) ([]int64, bool) {
		switch {
		case v.sym != nil:
			return v.sym, v.scalar
		case v.konst != nil && v.konst.ints != nil:
			return v.konst.ints, len(v.konst.dims) == 0
		}
		return nil, false
	}
	if x.konst != nil && y.konst != nil && x.konst.floats != nil && y.konst.floats != nil {
		return im.foldFloats(n, op, x.konst, y.konst)
	}
	a, as := vec(x)
	b, bs := vec(y)
	if a != nil && b != nil && (hasBatch(a) || hasBatch(b)) {
		return im.foldBatchArith(n, op, a, b, as && bs)
	}
	if a == nil || b == nil || (len(a) != len(b) && len(a) != 1 && len(b) != 1) {
		return fmt.Errorf("%w: %s of constants other than integer shape arithmetic (without the batch size)", ErrUnsupported, n.GetOpType())
	}
	out := make([]int64, max(len(a), len(b)))
	for i := range out {
		p, q := a[min(i, len(a)-1)], b[min(i, len(b)-1)]
		switch op {
		case gpu.BinAdd:
			out[i] = p + q
		case gpu.BinSub:
			out[i] = p - q
		case gpu.BinMul:
			out[i] = p * q
		case gpu.BinDiv:
			if q == 0 {
				return fmt.Errorf("%w: integer division by zero", ErrShape)
			}
			out[i] = int64(math.Floor(float64(p) / float64(q)))
		case gpu.BinMax:
			out[i] = max(p, q)
		case gpu.BinMin:
			out[i] = min(p, q)
		default:
			return fmt.Errorf("%w: %s of integer shape values", ErrUnsupported, n.GetOpType())
		}
	}
	im.vals[n.GetOutput()[0]] = &value{sym: out, scalar: as && bs}
	return nil
}

// reduceAxes returns the per-sample axes of a reduction (attribute before
// opset 18, input from it; ReduceSum's input from opset 13), sorted.
func (im *importer) reduceAxes(n *onnxpb.NodeProto, a attrs, rank int) ([]int, error) {
	axes := a.ints("axes")
	if im.opset >= 18 || (n.GetOpType() == "ReduceSum" && im.opset >= 13) {
		var err error
		if axes, err = im.intsInput(n, 1); err != nil {
			return nil, err
		}
	}
	if len(axes) == 0 && a.int("noop_with_empty_axes", 0) != 0 {
		return nil, nil // opset 18 (13 for ReduceSum): no axes is the identity
	}
	if len(axes) == 0 {
		return nil, fmt.Errorf("%w: %s over every axis, the batch included", ErrUnsupported, n.GetOpType())
	}
	var out []int
	for _, ax := range axes {
		k, err := sampleAxis(ax, rank, n.GetOpType())
		if err != nil {
			return nil, err
		}
		if slices.Contains(out, k) {
			return nil, fmt.Errorf("%w: %s axes %v repeat an axis", ErrShape, n.GetOpType(), axes)
		}
		out = append(out, k)
	}
	slices.Sort(out)
	return out, nil
}

// reduce maps ReduceMean, ReduceSum and ReduceMax. A mean over the spatial
// axes of N×C×H×W is a global average pool and a maximum over them a max
// pool of the whole plane (the layers PyTorch's exporter would give for
// adaptive pooling to 1×1); other means and sums are reduce layers;
// keepdims 0 only drops the reduced axes from the logical dims.
func (im *importer) reduce(n *onnxpb.NodeProto, a attrs) error {
	x, err := im.act(n, 0)
	if err != nil {
		return err
	}
	xd := x.ldims()
	axes, err := im.reduceAxes(n, a, len(xd)+1)
	if err != nil {
		return err
	}
	if axes == nil {
		im.vals[n.GetOutput()[0]] = x
		return nil
	}
	keep := a.int("keepdims", 1) != 0
	kept := slices.Clone(xd)
	var dropped []int
	for k := range xd {
		if slices.Contains(axes, k) {
			kept[k] = 1
		} else {
			dropped = append(dropped, xd[k])
		}
	}
	spatial := len(xd) == 3 && slices.Equal(axes, []int{1, 2})
	var v *value
	switch {
	case spatial && n.GetOpType() == "ReduceMean":
		v, err = im.push(models.Layer{Kind: "globalavgpool", Name: im.layerName(n, "")}, []*value{x}, 4, nil)
	case spatial && n.GetOpType() == "ReduceMax":
		v, err = im.push(models.Layer{Kind: "maxpool2d", Name: im.layerName(n, ""), KH: xd[1], KW: xd[2], SH: xd[1], SW: xd[2]},
			[]*value{x}, 4, nil)
	case n.GetOpType() == "ReduceMax":
		return fmt.Errorf("%w: ReduceMax over axes %v of per-sample dims %v (over the spatial axes of N×C×H×W only)", ErrUnsupported, axes, xd)
	default:
		v, err = im.push(models.Layer{Kind: "reduce", Name: im.layerName(n, ""), Dims: slices.Clone(xd), Axes: axes,
			Mean: n.GetOpType() == "ReduceMean"}, []*value{x}, 0, kept)
	}
	if err != nil {
		return err
	}
	if !keep {
		if len(dropped) == 0 {
			return fmt.Errorf("%w: %s keeps no per-sample axis", ErrUnsupported, n.GetOpType())
		}
		if v, err = im.view(v, dropped, im.layers[v.layer].Name+".squeeze"); err != nil {
			return err
		}
	}
	im.vals[n.GetOutput()[0]] = v
	return nil
}

// globalMaxPool is a max pool over the whole plane.
func (im *importer) globalMaxPool(n *onnxpb.NodeProto) error {
	x, err := im.act(n, 0)
	if err != nil {
		return err
	}
	if x.rank != 4 {
		return fmt.Errorf("%w: GlobalMaxPool of a rank-%d tensor (N×C×H×W only)", ErrUnsupported, x.rank)
	}
	s := x.shape
	_, err = im.add(n, models.Layer{Kind: "maxpool2d", Name: im.layerName(n, ""), KH: s.H, KW: s.W, SH: s.H, SW: s.W}, []*value{x}, 4)
	return err
}

// transposeOp maps a Transpose that keeps the batch axis first.
func (im *importer) transposeOp(n *onnxpb.NodeProto, a attrs) error {
	x, err := im.actView(n, 0)
	if err != nil {
		return err
	}
	xd := x.ldims()
	perm := a.ints("perm")
	if len(perm) == 0 {
		return fmt.Errorf("%w: Transpose without perm reverses the axes, the batch axis included", ErrUnsupported)
	}
	if x.view != nil || perm[0] != 0 {
		// The batch axis moves (nn.MultiheadAttention's): a view (views.go).
		return im.transposeView(n, x, perm)
	}
	if len(perm) != len(xd)+1 || perm[0] != 0 {
		return fmt.Errorf("%w: Transpose perm %v of a rank-%d tensor (the batch axis must stay first)", ErrUnsupported, perm, len(xd)+1)
	}
	p := make([]int, len(xd))
	out := make([]int, len(xd))
	for k, v := range perm[1:] {
		if v < 1 || int(v) > len(xd) {
			return fmt.Errorf("%w: Transpose perm %v", ErrShape, perm)
		}
		p[k] = int(v) - 1
		out[k] = xd[p[k]]
	}
	if slices.Equal(p, identityPerm(len(p))) {
		im.vals[n.GetOutput()[0]] = x
		return nil
	}
	v, err := im.push(models.Layer{Kind: "transpose", Name: im.layerName(n, ""), Dims: slices.Clone(xd), Perm: p}, []*value{x}, 0, out)
	if err == nil {
		im.vals[n.GetOutput()[0]] = v
	}
	return err
}

func identityPerm(n int) []int {
	p := make([]int, n)
	for i := range p {
		p[i] = i
	}
	return p
}

// sliceLayer adds the slice of x (per-sample dims xd) along per-sample axis
// k: count elements from start by step; the output is bound to name.
func (im *importer) sliceLayer(n *onnxpb.NodeProto, name string, x *value, starts, steps, counts []int) error {
	xd := x.ldims()
	if slices.Equal(counts, xd) {
		im.vals[name] = x // the whole tensor
		return nil
	}
	d := models.Layer{Kind: "slice", Name: im.layerName(n, ""), Dims: slices.Clone(xd), Starts: starts, Steps: steps, Counts: counts}
	v, err := im.push(d, []*value{x}, 0, slices.Clone(counts))
	if err == nil {
		im.vals[name] = v
	}
	return err
}

// splitOp maps Split along a per-sample axis into one slice layer per
// output: sizes from the attribute (before opset 13) or input 1, else equal
// parts.
func (im *importer) splitOp(n *onnxpb.NodeProto, a attrs) error {
	x, err := im.act(n, 0)
	if err != nil {
		return err
	}
	xd := x.ldims()
	k, err := sampleAxis(a.int("axis", 0), len(xd)+1, "Split")
	if err != nil {
		return err
	}
	sizes := a.ints("split")
	if im.opset >= 13 {
		if sizes, err = im.intsInput(n, 1); err != nil {
			return err
		}
	}
	outs := n.GetOutput()
	if len(sizes) == 0 {
		parts := len(outs)
		if no := a.int("num_outputs", 0); no > 0 {
			parts = int(no)
		}
		if parts == 0 || xd[k]%parts != 0 {
			return fmt.Errorf("%w: Split of %d elements into %d equal parts", ErrShape, xd[k], parts)
		}
		sizes = slices.Repeat([]int64{int64(xd[k] / parts)}, parts)
	}
	if len(sizes) != len(outs) {
		return fmt.Errorf("%w: Split sizes %v for %d outputs", ErrShape, sizes, len(outs))
	}
	var sum int64
	for _, s := range sizes {
		if s <= 0 {
			return fmt.Errorf("%w: Split sizes %v (empty parts are not supported)", ErrUnsupported, sizes)
		}
		sum += s
	}
	if sum != int64(xd[k]) {
		return fmt.Errorf("%w: Split sizes %v for an axis of %d", ErrShape, sizes, xd[k])
	}
	start := 0
	for i, s := range sizes {
		starts, steps, counts := make([]int, len(xd)), slices.Repeat([]int{1}, len(xd)), slices.Clone(xd)
		starts[k], counts[k] = start, int(s)
		start += int(s)
		if outs[i] == "" || im.uses[outs[i]] == 0 {
			continue // an unused part makes no layer (it would be a dead branch)
		}
		if err := im.sliceLayer(n, outs[i], x, starts, steps, counts); err != nil {
			return err
		}
	}
	return nil
}

// sliceOp maps Slice with positive steps (starts, ends, axes, steps as
// inputs from opset 10, attributes before), clamping as ONNX does; on a
// shape vector it slices the vector.
func (im *importer) sliceOp(n *onnxpb.NodeProto, a attrs) error {
	x, err := im.get(n, 0)
	if err != nil {
		return err
	}
	var starts, ends, axes, steps []int64
	if im.opset >= 10 {
		for i, dst := range []*[]int64{&starts, &ends, &axes, &steps} {
			if *dst, err = im.intsInput(n, i+1); err != nil {
				return err
			}
		}
	} else {
		starts, ends, axes = a.ints("starts"), a.ints("ends"), a.ints("axes")
	}
	if len(starts) != len(ends) || (axes != nil && len(axes) != len(starts)) || (steps != nil && len(steps) != len(starts)) {
		return fmt.Errorf("%w: Slice starts %v, ends %v, axes %v, steps %v differ in length", ErrShape, starts, ends, axes, steps)
	}
	if x.sym != nil && !x.scalar && (len(axes) == 0 || axes[0] == 0) && len(starts) == 1 && (steps == nil || steps[0] == 1) {
		lo, hi := clampRange(starts[0], ends[0], len(x.sym))
		im.vals[n.GetOutput()[0]] = &value{sym: slices.Clone(x.sym[lo:max(lo, hi)])}
		return nil
	}
	if x.view != nil {
		return im.sliceView(n, x, starts, ends, axes, steps)
	}
	if x, err = im.act(n, 0); err != nil {
		return err
	}
	xd := x.ldims()
	st, sp, cn := make([]int, len(xd)), slices.Repeat([]int{1}, len(xd)), slices.Clone(xd)
	for i := range starts {
		ax := int64(i)
		if axes != nil {
			ax = axes[i]
		}
		step := int64(1)
		if steps != nil {
			step = steps[i]
		}
		if step <= 0 {
			return fmt.Errorf("%w: Slice step %d (positive steps only)", ErrUnsupported, step)
		}
		full := ax
		if full < 0 {
			full += int64(len(xd) + 1)
		}
		if full == 0 {
			if starts[i] == 0 && ends[i] >= math.MaxInt32 && step == 1 {
				continue // the whole batch
			}
			return fmt.Errorf("%w: Slice along the batch axis", ErrUnsupported)
		}
		k, err := sampleAxis(ax, len(xd)+1, "Slice")
		if err != nil {
			return err
		}
		lo, hi := clampRange(starts[i], ends[i], xd[k])
		if hi <= lo {
			return fmt.Errorf("%w: Slice [%d:%d] of an axis of %d is empty", ErrUnsupported, starts[i], ends[i], xd[k])
		}
		st[k], sp[k], cn[k] = lo, int(step), (hi-lo+int(step)-1)/int(step)
	}
	return im.sliceLayer(n, n.GetOutput()[0], x, st, sp, cn)
}

// clampRange resolves ONNX's start and end (negative from the end, clamped
// to the axis) for positive steps.
func clampRange(start, end int64, n int) (int, int) {
	c := func(v int64) int {
		if v < 0 {
			v += int64(n)
		}
		return int(min(max(v, 0), int64(n)))
	}
	return c(start), c(end)
}

// squeezeOp maps Squeeze and Unsqueeze of an activation (axes as attribute
// before opset 13, input from it) to new logical dims.
func (im *importer) squeezeOp(n *onnxpb.NodeProto, a attrs) error {
	axes := a.ints("axes")
	if im.opset >= 13 {
		var err error
		if axes, err = im.intsInput(n, 1); err != nil {
			return err
		}
	}
	if raw, err := im.get(n, 0); err == nil && raw.view != nil {
		if err := im.squeezeView(n, raw, axes); !errors.Is(err, errSqueezeCanon) {
			return err
		}
	}
	x, err := im.act(n, 0)
	if err != nil {
		return err
	}
	xd := x.ldims()
	var out []int
	if n.GetOpType() == "Squeeze" {
		drop := map[int]bool{}
		for _, ax := range axes {
			k, err := sampleAxis(ax, len(xd)+1, "Squeeze")
			if err != nil {
				return err
			}
			if xd[k] != 1 {
				return fmt.Errorf("%w: Squeeze of axis %d of size %d", ErrShape, ax, xd[k])
			}
			drop[k] = true
		}
		for k, d := range xd {
			if !drop[k] && (len(axes) > 0 || d != 1) {
				out = append(out, d)
			}
		}
	} else {
		rank := len(xd) + 1 + len(axes)
		ins := map[int]bool{}
		for _, ax := range axes {
			k, err := sampleAxis(ax, rank, "Unsqueeze")
			if err != nil {
				return err
			}
			ins[k] = true
		}
		j := 0
		for k := range rank - 1 {
			if ins[k] {
				out = append(out, 1)
			} else {
				out = append(out, xd[j])
				j++
			}
		}
	}
	if len(out) == 0 {
		return fmt.Errorf("%w: %s to a tensor of the batch axis alone", ErrUnsupported, n.GetOpType())
	}
	v, err := im.view(x, out, im.layerName(n, ""))
	if err == nil {
		im.vals[n.GetOutput()[0]] = v
	}
	return err
}

// flattenAt maps Flatten at axis 1, however spelt (-3 of a rank-4 tensor),
// to a flatten layer. ONNX's Flatten always makes a 2-D result, so at axis 0
// it folds the batch into one row and at a later axis it folds per-sample
// axes into the batch axis: both mix samples, and are refused naming the
// axis.
func (im *importer) flattenAt(n *onnxpb.NodeProto, axis int64) error {
	x, err := im.act(n, 0)
	if err != nil {
		return err
	}
	rank := int64(len(x.ldims()) + 1)
	if axis < 0 {
		axis += rank
	}
	if axis != 1 {
		return fmt.Errorf("%w: Flatten at axis %d of a rank-%d tensor merges per-sample axes into the batch axis (axis 1 only)",
			ErrUnsupported, axis, rank)
	}
	return im.flatten(n)
}

// reshapeTo maps a Reshape to any shape that keeps the batch first: the
// target (a constant or folded shape arithmetic) may spell the batch as
// the batch size from Shape, 0 (copy), -1 (inferred) or the exported batch
// size, and the per-sample dims with 0 (copy) and one -1. A flatten to
// [N, F] stays a flatten layer; a reshape that changes only the logical
// dims costs nothing; others are reshape layers (copies).
func (im *importer) reshapeTo(n *onnxpb.NodeProto, a attrs) error {
	if v, err := im.get(n, 0); err == nil && v.sym != nil && !v.scalar {
		// A shape vector reshaped to one dimension (the class token's
		// Expand shape): itself.
		im.vals[n.GetOutput()[0]] = v
		return nil
	}
	x, err := im.actView(n, 0)
	if err != nil {
		return err
	}
	sv, err := im.get(n, 1)
	if err != nil {
		return err
	}
	target := sv.sym
	if sv.konst != nil {
		target = sv.konst.ints
	}
	if x.view != nil || slices.ContainsFunc(target[min(1, len(target)):], func(t int64) bool { _, ok := batchMul(t); return ok }) ||
		(len(target) > 0 && target[0] != batchDim && hasBatch(target[:1])) || len(target) == 1 && !hasBatch(target) {
		// The batch axis moves or takes in another (views.go).
		return im.reshapeView(n, x, target)
	}
	show := slices.Clone(target)
	for i := range show {
		if show[i] == batchDim {
			show[i] = -2 // printed as the batch size
		}
	}
	fail := func(why string) error {
		return fmt.Errorf("%w: Reshape of per-sample dims %v to %v (%s; -2 is the batch size)", ErrUnsupported, x.ldims(), show, why)
	}
	if len(target) < 2 {
		return fail("the batch axis must stay first")
	}
	if a.int("allowzero", 0) != 0 && slices.Contains(target, 0) {
		return fail("allowzero with a zero dimension")
	}
	xd := x.ldims()
	size := int64(x.shape.Size())
	dims := make([]int, len(target)-1)
	infer := -1
	known := int64(1)
	for i, t := range target[1:] {
		switch {
		case t == batchDim:
			return fail("the batch size after the first axis")
		case t == 0 && i < len(xd):
			dims[i] = xd[i]
		case t == -1 && infer < 0:
			infer = i
			continue
		case t > 0:
			dims[i] = int(t)
		default:
			return fail(fmt.Sprintf("dimension %d", t))
		}
		known *= int64(dims[i])
	}
	b := target[0]
	switch {
	case b == batchDim || b == 0:
	case b == -1 && infer < 0:
	case b > 0 && (infer >= 0 || known == size):
	default:
		return fail("the batch axis must stay first")
	}
	if infer >= 0 {
		if known == 0 || size%known != 0 {
			return fail("the sizes do not divide")
		}
		dims[infer] = int(size / known)
		known = size
	}
	if known != size {
		return fail(fmt.Sprintf("%d elements per sample, the input has %d", known, size))
	}
	if len(dims) == 1 {
		return im.flatten(n)
	}
	v, err := im.view(x, dims, im.layerName(n, ""))
	if err == nil {
		im.vals[n.GetOutput()[0]] = v
	}
	return err
}

// concatAny joins activations along a per-sample axis: the channel axis of
// N×C×H×W (and the features of N×F) with a concat layer, as before, any
// other axis with a concatnd layer; a Concat of one input is that input.
func (im *importer) concatAny(n *onnxpb.NodeProto, a attrs, ins []*value) error {
	for i := range ins {
		v, err := im.act(n, i)
		if err != nil {
			return err
		}
		ins[i] = v
	}
	d0 := ins[0].ldims()
	k, err := sampleAxis(a.int("axis", 1), len(d0)+1, "Concat")
	if err != nil {
		return err
	}
	out := slices.Clone(d0)
	out[k] = 0
	for i, v := range ins {
		d := v.ldims()
		if len(d) != len(d0) {
			return fmt.Errorf("%w: Concat of ranks %d and %d", ErrShape, len(d0)+1, len(d)+1)
		}
		for j := range d {
			if j != k && d[j] != d0[j] {
				return fmt.Errorf("%w: Concat along axis %d of per-sample dims %v and %v (input %d)", ErrShape, k+1, d0, d, i)
			}
		}
		out[k] += d[k]
	}
	if len(ins) == 1 {
		im.vals[n.GetOutput()[0]] = ins[0]
		return nil
	}
	if k == 0 && (len(d0) == 3 || len(d0) == 1) {
		_, err := im.add(n, models.Layer{Kind: "concat", Name: im.layerName(n, "")}, ins, len(d0)+1)
		return err
	}
	v, err := im.push(models.Layer{Kind: "concatnd", Name: im.layerName(n, ""), Axis: k, Dims: slices.Clone(d0)}, ins, 0, out)
	if err == nil {
		im.vals[n.GetOutput()[0]] = v
	}
	return err
}

// padLayer adds a pad layer of x by ONNX pads (begins then ends over every
// axis, the batch's zero) in mode ("" for the value constant, reflect or
// edge).
func (im *importer) padLayer(n *onnxpb.NodeProto, x *value, pads []int64, mode string, constant float32) error {
	xd := x.ldims()
	r := len(xd) + 1
	if len(pads) != 2*r {
		return fmt.Errorf("%w: Pad of %d values for a rank-%d tensor", ErrShape, len(pads), r)
	}
	if pads[0] != 0 || pads[r] != 0 {
		return fmt.Errorf("%w: Pad of the batch axis", ErrUnsupported)
	}
	before, after, out := make([]int, len(xd)), make([]int, len(xd)), slices.Clone(xd)
	for k := range xd {
		before[k], after[k] = int(pads[k+1]), int(pads[r+k+1])
		if before[k] < 0 || after[k] < 0 {
			return fmt.Errorf("%w: Pad %v with negative values (cropping)", ErrUnsupported, pads)
		}
		out[k] += before[k] + after[k]
	}
	if mode == "reflect" {
		for k := range xd {
			if before[k] >= xd[k] || after[k] >= xd[k] {
				return fmt.Errorf("%w: reflect Pad %v of dims %v (each pad must be shorter than its axis)", ErrShape, pads, xd)
			}
		}
	}
	d := models.Layer{Kind: "pad", Name: im.layerName(n, ""), Dims: slices.Clone(xd), Before: before, After: after, Mode: mode, Value: constant}
	v, err := im.push(d, []*value{x}, 0, out)
	if err == nil {
		im.vals[n.GetOutput()[0]] = v
	}
	return err
}

// tile maps Tile of an activation by constant repeats (one per axis, the
// batch's 1) to a tile layer (solver.Tile). Repeating the batch is
// refused: the network's batch is the caller's.
func (im *importer) tile(n *onnxpb.NodeProto) error {
	x, err := im.act(n, 0)
	if err != nil {
		return err
	}
	reps, err := im.intsInput(n, 1)
	if err != nil {
		return err
	}
	xd := x.ldims()
	if len(reps) != len(xd)+1 {
		return fmt.Errorf("%w: Tile repeats %v for a rank-%d input", ErrShape, reps, len(xd)+1)
	}
	if reps[0] != 1 {
		return fmt.Errorf("%w: Tile of the batch axis (repeats %v)", ErrUnsupported, reps)
	}
	rep := make([]int, len(xd))
	out := slices.Clone(xd)
	for k := range xd {
		r, err := limits.Count("Tile repeats", reps[k+1], true)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrMalformed, err)
		}
		rep[k] = r
		if out[k], err = limits.Product("Tile output", xd[k], r); err != nil {
			return fmt.Errorf("%w: %w", ErrShape, err)
		}
	}
	d := models.Layer{Kind: "tile", Name: im.layerName(n, ""), Dims: slices.Clone(xd), Repeats: rep}
	v, err := im.push(d, []*value{x}, 0, out)
	if err == nil {
		im.vals[n.GetOutput()[0]] = v
	}
	return err
}

// expand maps Expand of an activation by a constant shape (numpy's
// broadcast; TorchScript's Tensor.repeat writes one by all ones before its
// Tile): axes the shape leaves alone or gives the activation's own length
// stay, axes of length 1 that it stretches are repeated (a tile layer), and
// an Expand that changes nothing is no layer. A shape that would add axes,
// or stretch the batch, is refused.
func (im *importer) expand(n *onnxpb.NodeProto) error {
	if c, err := im.get(n, 0); err == nil && c.konst != nil {
		// A constant to a shape with the batch size (fold.go takes the
		// rest): the class token expanded over the batch.
		if s, err := im.get(n, 1); err == nil && s.sym != nil && hasBatch(s.sym) {
			return im.expandConst(n, c.konst, s.sym)
		}
	}
	x, err := im.act(n, 0)
	if err != nil {
		return err
	}
	shape, err := im.intsInput(n, 1)
	if err != nil {
		return err
	}
	xd := x.ldims()
	r := len(xd) + 1
	if shape == nil || len(shape) > r {
		return fmt.Errorf("%w: Expand of a rank-%d activation to %v (a constant shape of at most its rank)", ErrUnsupported, r, shape)
	}
	full := append(slices.Repeat([]int64{1}, r-len(shape)), shape...)
	if full[0] != 1 {
		return fmt.Errorf("%w: Expand of the batch axis to %d", ErrUnsupported, full[0])
	}
	rep, tiled := make([]int, len(xd)), false
	for k, d := range xd {
		s := full[k+1]
		switch {
		case s == 1 || s == int64(d):
			rep[k] = 1
		case d == 1:
			if rep[k], err = limits.Count("Expand", s, true); err != nil {
				return fmt.Errorf("%w: %w", ErrMalformed, err)
			}
			tiled = true
		default:
			return fmt.Errorf("%w: Expand of per-sample dims %v to %v, which do not broadcast", ErrShape, xd, shape)
		}
	}
	if !tiled {
		im.vals[n.GetOutput()[0]] = x
		return nil
	}
	out := slices.Clone(xd)
	for k := range out {
		out[k] *= rep[k]
	}
	d := models.Layer{Kind: "tile", Name: im.layerName(n, ""), Dims: slices.Clone(xd), Repeats: rep}
	v, err := im.push(d, []*value{x}, 0, out)
	if err == nil {
		im.vals[n.GetOutput()[0]] = v
	}
	return err
}
