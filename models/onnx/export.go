package onnx

import (
	"fmt"
	"io"
	"strconv"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/models/onnx/onnxpb"
	"github.com/cotrain/cotrain/solver"
	"google.golang.org/protobuf/proto"
)

// ExportOpset is the opset Export writes (IR version 7): 14, the first
// with HardSwish.
const ExportOpset = 14

// exportOpset is the opset Export writes for nodes: ExportOpset, or the
// first opset with an operator the network needs: 17 for a layer norm
// (LayerNormalization), 19 for a dilated average pool (AveragePool's
// dilations) or a resample with half_pixel_symmetric (18 for one with
// antialias), 20 for a GELU (Gelu), 21 for a group norm of fewer
// groups than channels (GroupNormalization with per-channel scale). Of what Export writes, only
// ReduceMean changed meaning between 14 and 21 (its axes an input from 18), and
// the reduce layer's export follows the opset (Resize gained attributes in
// 18 and 19 whose defaults are 13's meaning).
func exportOpset(nodes []solver.Node) int64 {
	opset := int64(ExportOpset)
	for _, nd := range nodes {
		switch l := nd.Layer.(type) {
		case *solver.LayerNorm:
			opset = max(opset, 17)
		case *solver.GroupNorm:
			if l.Groups != nd.Layer.Params()[0].Dims[0] { // fewer groups than channels
				opset = max(opset, 21) // GroupNormalization with per-channel scale
			}
		case *solver.Activation:
			if l.Act.Kind == gpu.KindGelu {
				opset = max(opset, 20)
			}
		case *solver.Pool2D:
			if l.Kind() == "avgpool2d" && (l.Cfg.DilH > 1 || l.Cfg.DilW > 1) {
				opset = max(opset, 19) // AveragePool's dilations
			}
		case *solver.Resample:
			if l.Coord == gpu.CoordHalfPixelSym {
				opset = max(opset, 19) // Resize's half_pixel_symmetric
			}
			if l.Antialias {
				opset = max(opset, 18) // Resize's antialias
			}
		}
	}
	return opset
}

// exporter builds one graph.
type exporter struct {
	g     *onnxpb.GraphProto
	opset int64 // exportOpset of the network
	// oneD writes a network of N×C×L input (C×1×L, every window 1×k) with
	// 1-D operators and a rank-3 input, as PyTorch's Conv1d models are
	// written (export_1d.go).
	oneD bool
	// ids: the network reads token ids (its first layer an embedding),
	// and its input is int64 batch×T (export_seq.go).
	ids bool
	// values holds every parameter by name, for the layers whose ONNX
	// tensors are rearranged from it (export_seq.go).
	values map[string][]float32
}

// Export writes the network of weight file f (a registered model or an
// imported graph) as an ONNX model: input "input" (batch×C×H×W, the batch
// dynamic; int64 batch×T token ids for a language model, export_seq.go;
// batch×C×L for a 1-D network, whose input is C×1×L and whose
// windows are all 1×k: its convolutions and pools are written 1-D, as
// PyTorch writes Conv1d, MaxPool1d, AvgPool1d), output "output" (batch×classes). Dropout layers are left out
// (they are the identity at inference); ReLU6 is Clip(0, 6); every tensor
// keeps its cotrain name ("features.0.weight").
func Export(w io.Writer, f *models.File) error {
	c, nodes, err := models.FileNodes(f)
	if err != nil {
		return err
	}
	net, err := solver.NewNet(cpu.NewCPU(), c.Input, nodes)
	if err != nil {
		return fmt.Errorf("onnx: export: %w", err)
	}
	if err := f.Apply(net, nil); err != nil {
		return fmt.Errorf("onnx: export: %w", err)
	}
	e := &exporter{g: &onnxpb.GraphProto{Name: proto.String(f.Model)}, ids: seqInput(nodes), values: map[string][]float32{},
		opset: exportOpset(nodes)}
	e.oneD = !e.ids && is1D(c.Input, nodes)
	params := make([]float32, net.Params.Len())
	net.B.Download(params, net.Params)
	for _, t := range net.Tensors() {
		e.values[t.Name] = params[t.Off : t.Off+t.Spec.Size()]
	}
	conv1D := e.conv1DWeights(nodes)
	for _, t := range net.Tensors() {
		dims := t.Dims
		if conv1D[t.Name] {
			dims = []int{dims[0], dims[1], dims[3]} // O×C×1×k as Conv1d's O×C×k
		}
		e.initializer(t.Name, dims, params[t.Off:t.Off+t.Spec.Size()])
	}
	state := make([]float32, net.State.Len())
	net.B.Download(state, net.State)
	for _, t := range net.StateTensors() {
		e.initializer(t.Name, t.Dims, state[t.Off:t.Off+t.Spec.Size()])
	}
	in := c.Input
	inDims := []int{in.C, in.H, in.W}
	if e.oneD {
		inDims = []int{in.C, in.W}
	}
	e.g.Input = []*onnxpb.ValueInfoProto{valueInfo("input", "batch", inDims...)}
	if e.ids {
		inDims = []int{in.Size()}
		e.g.Input[0] = valueInfo("input", "batch", inDims...)
		e.g.Input[0].Type.GetTensorType().ElemType = proto.Int32(int32(onnxpb.TensorProto_INT64))
	}

	names := make([]string, len(nodes)) // the ONNX value each layer outputs
	dims := make([][]int, len(nodes))   // its per-sample dims: C×H×W, F, or a structural layer's
	infos := net.Layers()
	for i, nd := range nodes {
		ins := nd.Inputs
		if ins == nil {
			ins = []int{i - 1}
		}
		var xs []string
		var xd [][]int
		for _, j := range ins {
			if j == solver.Input {
				xs, xd = append(xs, "input"), append(xd, inDims)
			} else {
				xs, xd = append(xs, names[j]), append(xd, dims[j])
			}
		}
		var ok bool
		e.align(nd.Layer, xs, xd)
		if e.oneD {
			e.align1D(nd.Layer, xs, xd)
		}
		if y, d, seq, err := e.sequence(nd.Layer, xs, xd); err != nil {
			return fmt.Errorf("onnx: export layer %s: %w", nd.Layer.Name(), err)
		} else if seq {
			names[i], dims[i] = y, d
		} else if names[i], dims[i], ok = e.structural(nd.Layer, xs, xd); !ok {
			var rank int
			names[i], rank, err = e.layer(nd.Layer, xs, len(xd[0])+1)
			if err != nil {
				return fmt.Errorf("onnx: export layer %s: %w", nd.Layer.Name(), err)
			}
			dims[i] = rankDims(rank, xd[0], infos[i].Out)
		}
	}
	last := names[len(nodes)-1]
	if len(dims[len(nodes)-1]) != 1 {
		last = e.node("Flatten", "output_flatten", []string{last}, attrInt("axis", 1))
	}
	if final := e.g.Node[len(e.g.Node)-1]; final.Output[0] == last {
		final.Output[0] = "output" // the last node's value is read by no other node
	} else {
		e.node("Identity", "output", []string{last}) // a trailing dropout aliased an earlier value
		e.g.Node[len(e.g.Node)-1].Output = []string{"output"}
	}
	e.g.Output = []*onnxpb.ValueInfoProto{valueInfo("output", "batch", net.Out.Size())}
	m := &onnxpb.ModelProto{
		IrVersion:       proto.Int64(7),
		ProducerName:    proto.String("cotrain"),
		ProducerVersion: proto.String(strconv.Itoa(models.FormatVersion)),
		OpsetImport:     []*onnxpb.OperatorSetIdProto{{Domain: proto.String(""), Version: proto.Int64(e.opset)}},
		Graph:           e.g,
	}
	// The class names and input normalisation travel as metadata, which
	// Import reads back and other ONNX tools show (or ignore).
	for _, kv := range models.DefiningMeta(f.Meta) {
		if kv[0] != models.MetaGraph {
			m.MetadataProps = append(m.MetadataProps, &onnxpb.StringStringEntryProto{Key: proto.String(MetaPrefix + kv[0]), Value: proto.String(kv[1])})
		}
	}
	raw, err := proto.Marshal(m)
	if err != nil {
		return fmt.Errorf("onnx: export: %w", err)
	}
	if _, err := w.Write(raw); err != nil {
		return fmt.Errorf("onnx: export: %w", err)
	}
	return nil
}

// layer emits the nodes of one layer reading xs (of the given rank) and
// returns its output value and rank.
func (e *exporter) layer(l solver.Layer, xs []string, rank int) (string, int, error) {
	name := l.Name()
	p := func(s string) string { return name + "." + s }
	switch l := l.(type) {
	case *solver.Conv2D:
		if e.oneD && rank == 3 {
			return e.conv1D(l, xs), 3, nil
		}
		if rank != 4 {
			return "", 0, fmt.Errorf("%w: convolution of a flattened tensor", ErrUnsupported)
		}
		c := l.Cfg
		ins := []string{xs[0], p("weight")}
		if !c.NoBias {
			ins = append(ins, p("bias"))
		}
		return e.node("Conv", name, ins, attrInts("kernel_shape", c.KH, c.KW), attrInts("strides", c.StrideH, c.StrideW),
			attrInts("pads", c.PadH, c.PadW, c.PadH, c.PadW), attrInts("dilations", 1, 1), attrInt("group", c.Groups)), 4, nil
	case *solver.DilatedConv2D:
		if e.oneD && rank == 3 {
			c, ins := l.Cfg, []string{xs[0], p("weight")}
			if !c.NoBias {
				ins = append(ins, p("bias"))
			}
			return e.node("Conv", name, ins, attrInts("kernel_shape", c.KW), attrInts("strides", c.StrideW),
				attrInts("pads", c.PadW, c.PadW), attrInts("dilations", l.DW), attrInt("group", c.Groups)), 3, nil
		}
		if rank != 4 {
			return "", 0, fmt.Errorf("%w: dilated convolution of rank %d (N×C×H×W only)", ErrUnsupported, rank)
		}
		c := l.Cfg
		ins := []string{xs[0], p("weight")}
		if !c.NoBias {
			ins = append(ins, p("bias"))
		}
		return e.node("Conv", name, ins, attrInts("kernel_shape", c.KH, c.KW), attrInts("strides", c.StrideH, c.StrideW),
			attrInts("pads", c.PadH, c.PadW, c.PadH, c.PadW), attrInts("dilations", l.DH, l.DW), attrInt("group", c.Groups)), 4, nil
	case *solver.ConvTranspose2D:
		c := l.Cfg
		ins := []string{xs[0], p("weight")}
		if !c.NoBias {
			ins = append(ins, p("bias"))
		}
		if e.oneD && rank == 3 {
			// ConvTranspose1d's: N×C×L, 1-D attributes, weight In×(Out/g)×k.
			return e.node("ConvTranspose", name, ins, attrInts("kernel_shape", c.KW), attrInts("strides", c.StrideW),
				attrInts("pads", c.PadW, c.PadW), attrInts("output_padding", l.OutPadW),
				attrInts("dilations", max(l.DW, 1)), attrInt("group", c.Groups)), 3, nil
		}
		if rank != 4 {
			return "", 0, fmt.Errorf("%w: transposed convolution of rank %d (N×C×H×W only)", ErrUnsupported, rank)
		}
		return e.node("ConvTranspose", name, ins, attrInts("kernel_shape", c.KH, c.KW), attrInts("strides", c.StrideH, c.StrideW),
			attrInts("pads", c.PadH, c.PadW, c.PadH, c.PadW), attrInts("output_padding", l.OutPadH, l.OutPadW),
			attrInts("dilations", max(l.DH, 1), max(l.DW, 1)), attrInt("group", c.Groups)), 4, nil
	case *solver.Pool2D:
		c := l.Cfg
		if e.oneD && rank == 3 {
			return e.pool1D(l, xs), 3, nil
		}
		switch l.Kind() {
		case "globalavgpool":
			return e.node("GlobalAveragePool", name, xs), 4, nil
		case "maxpool2d":
			return e.node("MaxPool", name, xs, poolDilations(c, attrInts("kernel_shape", c.KH, c.KW), attrInts("strides", c.StrideH, c.StrideW),
				attrInts("pads", c.PadH, c.PadW, c.PadH, c.PadW), attrInt("ceil_mode", b2i(c.CeilMode)))...), 4, nil
		}
		return e.node("AveragePool", name, xs, poolDilations(c, attrInts("kernel_shape", c.KH, c.KW), attrInts("strides", c.StrideH, c.StrideW),
			attrInts("pads", c.PadH, c.PadW, c.PadH, c.PadW), attrInt("ceil_mode", b2i(c.CeilMode)),
			attrInt("count_include_pad", b2i(c.CountIncludePad)))...), 4, nil
	case *solver.PReLU:
		// ONNX broadcasts the slope from the right: per channel of an
		// image it is C×1×1, of a 1-D signal C×1.
		if rank > 2 && l.Slopes > 1 {
			dims := []int{l.Slopes}
			for range rank - 2 {
				dims = append(dims, 1)
			}
			e.setDims(p("weight"), dims...)
		}
		return e.node("PRelu", name, []string{xs[0], p("weight")}), rank, nil
	case *solver.LRN:
		if rank != 4 {
			return "", 0, fmt.Errorf("%w: LRN of a flattened tensor", ErrUnsupported)
		}
		return e.node("LRN", name, xs, attrInt("size", l.Size), attrFloat("alpha", l.Alpha), attrFloat("beta", l.Beta),
			attrFloat("bias", l.Bias)), 4, nil
	case *solver.Linear:
		x := xs[0]
		if rank != 2 {
			x = e.node("Flatten", name+".flatten", xs, attrInt("axis", 1))
		}
		ins := []string{x, p("weight")}
		if !l.NoBias {
			ins = append(ins, p("bias"))
		}
		return e.node("Gemm", name, ins, attrInt("transB", 1)), 2, nil
	case *solver.Activation:
		y, err := e.activation(l, xs[0])
		return y, rank, err
	case *solver.BatchNorm:
		return e.node("BatchNormalization", name, []string{xs[0], p("weight"), p("bias"), p("running_mean"), p("running_var")},
			attrFloat("epsilon", l.Eps), attrFloat("momentum", 1-l.Momentum)), rank, nil
	case *solver.Flatten:
		if rank == 2 {
			return xs[0], 2, nil
		}
		return e.node("Flatten", name, xs, attrInt("axis", 1)), 2, nil
	case *solver.Dropout:
		return xs[0], rank, nil
	case *solver.Add:
		out := xs[0]
		for k, x := range xs[1:] {
			suffix := ""
			if k > 0 {
				suffix = "_" + strconv.Itoa(k)
			}
			out = e.node("Add", name+suffix, []string{out, x})
		}
		return out, rank, nil
	case *solver.Concat:
		return e.node("Concat", name, xs, attrInt("axis", 1)), rank, nil
	}
	return "", 0, fmt.Errorf("%w: layer kind %s", ErrUnsupported, l.Kind())
}

// activation emits the node of an activation layer: the ONNX operator of
// its entry in gpu's operator table, each parameter as the attribute or
// constant input the entry names (an optional input at its default, a
// clip's infinite bound, is left out). The two kinds without an ONNX
// operator are written as PyTorch writes them: ReLU6 as Clip(0, 6), SiLU
// as x·Sigmoid(x).
func (e *exporter) activation(l *solver.Activation, x string) (string, error) {
	name, a := l.Name(), l.Act
	switch a.Kind {
	case gpu.KindReLU6:
		a = gpu.Clip(0, 6)
	case gpu.KindSiLU:
		s := e.node("Sigmoid", name+".sigmoid", []string{x})
		return e.node("Mul", name, []string{x, s}), nil
	}
	op, ok := a.Op()
	if !ok || op.ONNX == "" {
		return "", fmt.Errorf("%w: activation %v has no ONNX operator", ErrUnsupported, a)
	}
	ins := []string{x}
	var at []*onnxpb.AttributeProto
	for k, p := range op.Params {
		v := [2]float32{a.Alpha, a.Beta}[k]
		switch {
		case p.ONNXAttr != "":
			at = append(at, attrFloat(p.ONNXAttr, v))
		case p.ONNXInput > 0:
			for len(ins) <= p.ONNXInput {
				ins = append(ins, "")
			}
			if p.Required || v != p.Default {
				ins[p.ONNXInput] = name + "." + p.Name
				e.initializer(ins[p.ONNXInput], nil, []float32{v})
			}
		}
	}
	for len(ins) > 1 && ins[len(ins)-1] == "" {
		ins = ins[:len(ins)-1] // trailing optional inputs are left out
	}
	return e.node(op.ONNX, name, ins, at...), nil
}

// node appends a node named name and returns its output's name.
func (e *exporter) node(op, name string, ins []string, attrs ...*onnxpb.AttributeProto) string {
	out := name + ".out"
	e.g.Node = append(e.g.Node, &onnxpb.NodeProto{OpType: proto.String(op), Name: proto.String(name),
		Input: ins, Output: []string{out}, Attribute: attrs})
	return out
}

func (e *exporter) initializer(name string, dims []int, v []float32) {
	t := &onnxpb.TensorProto{Name: proto.String(name), DataType: proto.Int32(int32(onnxpb.TensorProto_FLOAT)),
		FloatData: append([]float32(nil), v...)}
	for _, d := range dims {
		t.Dims = append(t.Dims, int64(d))
	}
	e.g.Initializer = append(e.g.Initializer, t)
}

// setDims gives the initializer name the dims dims (of the same size).
func (e *exporter) setDims(name string, dims ...int) {
	for _, t := range e.g.Initializer {
		if t.GetName() == name {
			t.Dims = t.Dims[:0]
			for _, d := range dims {
				t.Dims = append(t.Dims, int64(d))
			}
		}
	}
}

func valueInfo(name, batch string, dims ...int) *onnxpb.ValueInfoProto {
	shape := &onnxpb.TensorShapeProto{Dim: []*onnxpb.TensorShapeProto_Dimension{
		{Value: &onnxpb.TensorShapeProto_Dimension_DimParam{DimParam: batch}}}}
	for _, d := range dims {
		shape.Dim = append(shape.Dim, &onnxpb.TensorShapeProto_Dimension{
			Value: &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: int64(d)}})
	}
	return &onnxpb.ValueInfoProto{Name: proto.String(name), Type: &onnxpb.TypeProto{
		Value: &onnxpb.TypeProto_TensorType{TensorType: &onnxpb.TypeProto_Tensor{
			ElemType: proto.Int32(int32(onnxpb.TensorProto_FLOAT)), Shape: shape}}}}
}

func attrInt(name string, v int) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_INT.Enum(), I: proto.Int64(int64(v))}
}

func attrFloat(name string, v float32) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_FLOAT.Enum(), F: proto.Float32(v)}
}

func attrInts(name string, vs ...int) *onnxpb.AttributeProto {
	a := &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_INTS.Enum()}
	for _, v := range vs {
		a.Ints = append(a.Ints, int64(v))
	}
	return a
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// poolDilations returns a pool's attributes with its dilations added when
// it has any (an undilated pool's node is what it was before pools had
// them): [DilH, DilW], or the 1-D pool's [DilW] when attrs are 1-D.
func poolDilations(c solver.PoolConfig, attrs ...*onnxpb.AttributeProto) []*onnxpb.AttributeProto {
	if c.DilH <= 1 && c.DilW <= 1 {
		return attrs
	}
	if len(attrs[0].GetInts()) == 1 {
		return append(attrs, attrInts("dilations", c.DilW))
	}
	return append(attrs, attrInts("dilations", c.DilH, c.DilW))
}
