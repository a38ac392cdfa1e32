package onnx

import (
	"slices"
	"strconv"

	"google.golang.org/protobuf/proto"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/models/onnx/onnxpb"
	"github.com/cotrain/cotrain/solver"
)

// Exporting the structural layers (solver/shape_ops.go, arith_ops.go).
// Every exported value has the logical per-sample dims the layers were
// imported with, so import → export → import gives the same layers; where a
// layer's input has other dims (a layer fed by a flatten, say), a Reshape
// to [-1, dims...] is inserted first.

// rankDims returns the per-sample dims of a classic layer's output: the
// input's for an elementwise layer (same rank and size), else C×H×W for rank
// 4 and F for rank 2.
func rankDims(rank int, in []int, out solver.Shape) []int {
	if rank == len(in)+1 && solver.DimsShape(in) == out {
		return in
	}
	switch rank {
	case 4:
		return []int{out.C, out.H, out.W}
	case 3: // N×C×L, stored as C×1×L (export_1d.go)
		return []int{out.C, out.W}
	}
	return []int{out.Size()}
}

// ensure returns x (of per-sample dims have) as a value of dims want.
func (e *exporter) ensure(x string, have, want []int, name string) string {
	if slices.Equal(have, want) {
		return x
	}
	shape := append([]int64{-1}, int64s(want)...)
	e.intInit(name+".shape", shape)
	return e.node("Reshape", name, []string{x, name + ".shape"})
}

func int64s(v []int) []int64 {
	out := make([]int64, len(v))
	for i, x := range v {
		out[i] = int64(x)
	}
	return out
}

// plus1 returns per-sample axes as ONNX axes (after the batch axis).
func plus1(v []int) []int {
	out := make([]int, len(v))
	for i, x := range v {
		out[i] = x + 1
	}
	return out
}

// intInit adds an int64 initializer of one dimension.
func (e *exporter) intInit(name string, v []int64) {
	e.g.Initializer = append(e.g.Initializer, &onnxpb.TensorProto{Name: proto.String(name),
		DataType: proto.Int32(int32(onnxpb.TensorProto_INT64)), Dims: []int64{int64(len(v))}, Int64Data: v})
}

// align gives the inputs of the classic joins consistent dims, which an
// imported graph may not have spelled out (a ReduceMax with keepdims 0 is a
// max pool whose N×C×1×1 output the importer merely views as N×C): a
// concat of inputs that are not all C×H×W joins them flattened, an add
// reads every input with the first one's dims.
func (e *exporter) align(l solver.Layer, xs []string, xd [][]int) {
	switch l.(type) {
	case *solver.Concat:
		flat := false
		for _, d := range xd {
			flat = flat || len(d) != 3
		}
		if !flat {
			return
		}
		for k := range xs {
			want := []int{solver.DimsShape(xd[k]).Size()}
			xs[k], xd[k] = e.ensure(xs[k], xd[k], want, l.Name()+".in"+strconv.Itoa(k)), want
		}
	case *solver.Add:
		for k := 1; k < len(xs); k++ {
			xs[k], xd[k] = e.ensure(xs[k], xd[k], xd[0], l.Name()+".in"+strconv.Itoa(k)), xd[0]
		}
	}
}

// structural emits the nodes of a structural layer reading xs (of per-sample
// dims xd) and returns its output and dims; ok is false for other layers.
func (e *exporter) structural(l solver.Layer, xs []string, xd [][]int) (string, []int, bool) {
	name := l.Name()
	switch l := l.(type) {
	case *solver.Softmax:
		return e.softmax(l, xs[0], xd[0]), l.InDims(), true
	case *solver.GroupNorm:
		// A group per channel is InstanceNormalization; other groups
		// GroupNormalization with per-channel scale and bias, an operator of
		// opset 21 (exportOpset).
		dims := l.Dims
		if dims == nil {
			dims = xd[0]
		}
		x := e.ensure(xs[0], xd[0], dims, name+".in")
		ins := []string{x, name + ".weight", name + ".bias"}
		if l.Groups == dims[0] {
			return e.node("InstanceNormalization", name, ins, attrFloat("epsilon", l.Eps)), dims, true
		}
		return e.node("GroupNormalization", name, ins, attrInt("num_groups", l.Groups), attrFloat("epsilon", l.Eps)), dims, true
	case *solver.Linear:
		if !l.Rowwise() {
			return "", nil, false // a Gemm of the flattened sample (layer)
		}
		// nn.Linear of a tensor of several dims, as torch.onnx.export
		// writes it: MatMul by the weight transposed (in×out), then Add of
		// the bias. The weight keeps its out×in initializer; a Transpose
		// node turns it, which Import folds.
		x := e.ensure(xs[0], xd[0], l.Dims, name+".in")
		wt := e.node("Transpose", name+".weight_t", []string{name + ".weight"}, attrInts("perm", 1, 0))
		y := e.node("MatMul", name, []string{x, wt})
		if !l.NoBias {
			y = e.node("Add", name+".add", []string{y, name + ".bias"})
		}
		return y, l.OutDims(), true
	case *solver.ScaleParam:
		x := e.ensure(xs[0], xd[0], l.Dims, name+".in")
		return e.node("Mul", name, []string{x, name + ".weight"}), l.Dims, true
	case *solver.AddParam:
		x := e.ensure(xs[0], xd[0], l.Dims, name+".in")
		return e.node("Add", name, []string{x, name + ".weight"}), l.Dims, true
	case *solver.Prepend:
		// As torch.onnx.export writes torch.cat([token.expand(N, -1, -1),
		// x], 1): the batch size from Shape, Expand, Concat (Import reads
		// it back as this layer).
		x := e.ensure(xs[0], xd[0], l.Dims, name+".in")
		e.intInit(name+".first", []int64{0})
		e.intInit(name+".ones", slices.Repeat([]int64{1}, len(l.Dims)))
		shape := e.node("Shape", name+".shape", []string{x})
		batch := e.node("Gather", name+".batch", []string{shape, name + ".first"}, attrInt("axis", 0))
		full := e.node("Concat", name+".full", []string{batch, name + ".ones"}, attrInt("axis", 0))
		tok := e.node("Expand", name+".expand", []string{name + ".weight", full})
		return e.node("Concat", name, []string{tok, x}, attrInt("axis", l.Axis+1)), l.OutDims(), true
	case *solver.LayerNorm:
		// An operator of opset 17: Export writes that opset when the
		// network has one (layerNormOpset).
		x := e.ensure(xs[0], xd[0], l.Dims, name+".in")
		return e.node("LayerNormalization", name, []string{x, name + ".weight", name + ".bias"},
			attrInt("axis", l.Axis+1), attrFloat("epsilon", l.Eps)), l.Dims, true
	case *solver.Reshape:
		out := l.Out
		if e.oneD && len(out) == 3 && out[1] == 1 {
			out = []int{out[0], out[2]} // C×1×L is N×C×L in a 1-D network
		}
		return e.ensure(xs[0], xd[0], out, name), out, true
	case *solver.Transpose:
		x := e.ensure(xs[0], xd[0], l.In, name+".in")
		return e.node("Transpose", name, []string{x}, attrInts("perm", append([]int{0}, plus1(l.Perm)...)...)), l.OutDims(), true
	case *solver.Slice:
		x := e.ensure(xs[0], xd[0], l.In, name+".in")
		ends := make([]int64, len(l.In))
		for k := range ends {
			ends[k] = int64(l.Starts[k] + (l.Counts[k]-1)*l.Steps[k] + 1)
		}
		e.intInit(name+".starts", int64s(l.Starts))
		e.intInit(name+".ends", ends)
		e.intInit(name+".axes", int64s(plus1(identityPerm(len(l.In)))))
		e.intInit(name+".steps", int64s(l.Steps))
		return e.node("Slice", name, []string{x, name + ".starts", name + ".ends", name + ".axes", name + ".steps"}), l.Counts, true
	case *solver.Pad:
		x := e.ensure(xs[0], xd[0], l.In, name+".in")
		pads := append(append([]int64{0}, int64s(l.Before)...), 0)
		e.intInit(name+".pads", append(pads, int64s(l.After)...))
		if l.Mode != "" {
			mode := &onnxpb.AttributeProto{Name: proto.String("mode"), Type: onnxpb.AttributeProto_STRING.Enum(), S: []byte(l.Mode)}
			return e.node("Pad", name, []string{x, name + ".pads"}, mode), l.OutDims(), true
		}
		if l.Value != 0 {
			// Pad's third input, constant_value (opset 11 on): a scalar.
			e.initializer(name+".value", nil, []float32{l.Value})
			return e.node("Pad", name, []string{x, name + ".pads", name + ".value"}), l.OutDims(), true
		}
		return e.node("Pad", name, []string{x, name + ".pads"}), l.OutDims(), true
	case *solver.Resample:
		return e.resample(l, xs[0], xd[0]), e.resampleDims(l.Out), true
	case *solver.ConcatND:
		ins := make([]string, len(xs))
		inner := 1
		for _, d := range l.Dims[l.Axis+1:] {
			inner *= d
		}
		outer := 1
		for _, d := range l.Dims[:l.Axis] {
			outer *= d
		}
		for i, x := range xs {
			want := slices.Clone(l.Dims)
			want[l.Axis] = solver.DimsShape(xd[i]).Size() / (inner * outer)
			ins[i] = e.ensure(x, xd[i], want, name+".in"+strconv.Itoa(i))
		}
		return e.node("Concat", name, ins, attrInt("axis", l.Axis+1)), l.OutDims(), true
	case *solver.Binary:
		op := l.Op.String()
		if l.Const == nil {
			a := e.ensure(xs[0], xd[0], l.A, name+".a")
			b := e.ensure(xs[1], xd[1], l.B, name+".b")
			return e.node(op, name, []string{a, b}), l.OutDims(), true
		}
		x := e.ensure(xs[0], xd[0], l.A, name+".in")
		c := name + ".const"
		e.initializer(c, append([]int{1}, l.B...), l.Const)
		ins := []string{x, c}
		if l.ConstFirst {
			ins = []string{c, x}
		}
		return e.node(op, name, ins), l.OutDims(), true
	case *solver.Tile:
		x := e.ensure(xs[0], xd[0], l.In, name+".in")
		e.intInit(name+".repeats", append([]int64{1}, int64s(l.Repeats)...))
		return e.node("Tile", name, []string{x, name + ".repeats"}), l.OutDims(), true
	case *solver.MatMul:
		a := e.ensure(xs[0], xd[0], l.A, name+".a")
		b := e.ensure(xs[1], xd[1], l.B, name+".b")
		return e.node("MatMul", name, []string{a, b}), l.OutDims(), true
	case *solver.Reduce:
		x := e.ensure(xs[0], xd[0], l.In, name+".in")
		axes := plus1(l.Axes)
		if l.Mean && e.opset < 18 {
			return e.node("ReduceMean", name, []string{x}, attrInts("axes", axes...), attrInt("keepdims", 1)), l.OutDims(), true
		}
		if l.Mean { // from opset 18 the axes are an input, as ReduceSum's from 13
			e.intInit(name+".axes", int64s(axes))
			return e.node("ReduceMean", name, []string{x, name + ".axes"}, attrInt("keepdims", 1)), l.OutDims(), true
		}
		e.intInit(name+".axes", int64s(axes))
		return e.node("ReduceSum", name, []string{x, name + ".axes"}, attrInt("keepdims", 1)), l.OutDims(), true
	}
	return "", nil, false
}

// resampleDims are a resample layer's output dims as the exported graph
// holds them: C×L in a 1-D network, whose layers store N×C×L as C×1×L.
func (e *exporter) resampleDims(d []int) []int {
	if e.oneD && len(d) == 3 && d[1] == 1 {
		return []int{d[0], d[2]}
	}
	return d
}

// resample writes a resample layer as Resize (opset 13's inputs: X, an
// empty roi, then scales, or sizes): by sizes, the batch and channels come
// from Shape(x) (Slice 0:2, Concat with the spatial sizes), as
// torch.onnx.export writes F.interpolate(size=...), since the batch is not
// the network's to fix. The import of either reads the same layer back, so
// the round trip keeps the bits. A 1-D network's C×1×L resample is
// N×C×L's.
func (e *exporter) resample(l *solver.Resample, x string, xd []int) string {
	name := l.Name()
	in, out, sc := l.In, l.Out, l.Scales
	if e.oneD && len(in) == 3 && in[1] == 1 {
		in, out = []int{in[0], in[2]}, []int{out[0], out[2]}
		if sc != nil {
			sc = sc[1:]
		}
	}
	x = e.ensure(x, xd, in, name+".in")
	str := func(k, v string) *onnxpb.AttributeProto {
		return &onnxpb.AttributeProto{Name: proto.String(k), Type: onnxpb.AttributeProto_STRING.Enum(), S: []byte(v)}
	}
	attrs := []*onnxpb.AttributeProto{str("mode", l.Mode), str("coordinate_transformation_mode", l.Coord)}
	switch l.Mode {
	case gpu.ResampleNearest:
		attrs = append(attrs, str("nearest_mode", l.Nearest))
	case gpu.ResampleCubic:
		attrs = append(attrs, attrFloat("cubic_coeff_a", l.CubicA), attrInt("exclude_outside", b2i(l.Exclude)))
	case gpu.ResampleLinear:
		if l.Antialias { // an attribute of opset 18 (exportOpset)
			attrs = append(attrs, attrInt("antialias", 1), attrInt("exclude_outside", b2i(l.Exclude)))
		}
	}
	if sc != nil {
		e.initializer(name+".scales", []int{len(sc) + 2}, append([]float32{1, 1}, sc...))
		return e.node("Resize", name, []string{x, "", name + ".scales"}, attrs...)
	}
	shape := e.node("Shape", name+".shape", []string{x})
	e.intInit(name+".start", []int64{0})
	e.intInit(name+".end", []int64{2})
	e.intInit(name+".axis", []int64{0})
	e.intInit(name+".step", []int64{1})
	nc := e.node("Slice", name+".nc", []string{shape, name + ".start", name + ".end", name + ".axis", name + ".step"})
	e.intInit(name+".spatial", int64s(out[1:]))
	sizes := e.node("Concat", name+".sizes", []string{nc, name + ".spatial"}, attrInt("axis", 0))
	return e.node("Resize", name, []string{x, "", "", sizes}, attrs...)
}
