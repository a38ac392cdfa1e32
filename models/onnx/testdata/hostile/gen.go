//go:build ignore

// gen writes the hostile ONNX files of issue 28 beside itself, each a small
// edit of a real export (../lenet5_softmax_op9.onnx) or a three-node graph,
// so that the tests import the very files the attack used:
//
//	go run ./models/onnx/testdata/hostile/gen.go   (from the module root)
//
// Each file is crafted so that the old importer accepted it: sizes whose
// products wrap around int64 to a small number, with a fully connected
// weight of exactly that many inputs.
package main

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"google.golang.org/protobuf/proto"

	"github.com/cotrain/cotrain/models/onnx/onnxpb"
)

const dir = "models/onnx/testdata"

func main() {
	raw, err := os.ReadFile(filepath.Join(dir, "lenet5_softmax_op9.onnx"))
	if err != nil {
		fail(err)
	}
	lenet := func(edit func(*onnxpb.GraphProto)) *onnxpb.ModelProto {
		var m onnxpb.ModelProto
		if err := proto.Unmarshal(raw, &m); err != nil {
			fail(err)
		}
		edit(m.Graph)
		return &m
	}

	// Conv pads 2^60-11 on conv1: the flattened size, 16·H·W with H = W =
	// 2^59-2 after the two pools, is 64 modulo 2^64, so fc1 gets a
	// 120×64 weight.
	const pad = 1<<60 - 11
	write("conv_pads.onnx", lenet(func(g *onnxpb.GraphProto) {
		setInts(node(g, "/conv1/Conv"), "pads", pad, pad, pad, pad)
		flat := lenetFlat(28, 28, pad)
		setInit(g, "fc1.weight", 120, flat)
	}))
	// Input channels 2^32: conv1's weight in the file stays 6×1×5×5; the
	// layer the old importer built asked for 6×2^32×5×5 before comparing.
	write("input_channels.onnx", lenet(func(g *onnxpb.GraphProto) {
		setInput(g, 1, 1<<32, 28, 28)
	}))
	// Zero strides and groups, which the old importer replaced by defaults.
	write("conv_stride0.onnx", lenet(func(g *onnxpb.GraphProto) { setInts(node(g, "/conv1/Conv"), "strides", 0, 0) }))
	write("conv_group0.onnx", lenet(func(g *onnxpb.GraphProto) { setInt(node(g, "/conv1/Conv"), "group", 0) }))
	write("maxpool_stride0.onnx", lenet(func(g *onnxpb.GraphProto) { setInts(node(g, "/MaxPool"), "strides", 0, 0) }))

	// Input 1×1×(2^62+7)×4 into a 3×3 convolution padded by 1, flattened
	// into a linear layer: (2^62+7)·4 is 28 modulo 2^64.
	const rows = 1<<62 + 7
	write("input_rows.onnx", small(rows, 4, 10, (rows*4)&math.MaxInt64))
}

// lenetFlat is the flattened size after LeNet-5's conv1 (5×5, pad p),
// pool, conv2 (5×5) and pool, computed as the old importer did: in int64
// arithmetic that wraps.
func lenetFlat(h, w, p int64) int64 {
	side := func(x int64) int64 {
		x = x + 2*p - 5 + 1
		x = (x-2)/2 + 1
		x = x - 5 + 1
		return (x-2)/2 + 1
	}
	return 16 * side(h) * side(w)
}

// small is input x (1×1×h×w), Conv 3×3 pad 1 to one channel, Flatten,
// Gemm to classes outputs with a classes×flat weight.
func small(h, w int64, classes, flat int64) *onnxpb.ModelProto {
	g := &onnxpb.GraphProto{Name: proto.String("hostile")}
	g.Input = []*onnxpb.ValueInfoProto{valueInfo("x", 1, 1, h, w)}
	g.Output = []*onnxpb.ValueInfoProto{valueInfo("y", 1, classes)}
	g.Initializer = []*onnxpb.TensorProto{zeros("conv.weight", 1, 1, 3, 3), zeros("conv.bias", 1),
		zeros("fc.weight", classes, flat), zeros("fc.bias", classes)}
	g.Node = []*onnxpb.NodeProto{
		{OpType: proto.String("Conv"), Name: proto.String("conv"), Input: []string{"x", "conv.weight", "conv.bias"}, Output: []string{"c"},
			Attribute: []*onnxpb.AttributeProto{ints("kernel_shape", 3, 3), ints("pads", 1, 1, 1, 1), ints("strides", 1, 1)}},
		{OpType: proto.String("Flatten"), Name: proto.String("flat"), Input: []string{"c"}, Output: []string{"f"}},
		{OpType: proto.String("Gemm"), Name: proto.String("fc"), Input: []string{"f", "fc.weight", "fc.bias"}, Output: []string{"y"},
			Attribute: []*onnxpb.AttributeProto{{Name: proto.String("transB"), Type: onnxpb.AttributeProto_INT.Enum(), I: proto.Int64(1)}}},
	}
	return &onnxpb.ModelProto{IrVersion: proto.Int64(7), ProducerName: proto.String("hostile-gen"), Graph: g,
		OpsetImport: []*onnxpb.OperatorSetIdProto{{Version: proto.Int64(13)}}}
}

func node(g *onnxpb.GraphProto, name string) *onnxpb.NodeProto {
	for _, n := range g.Node {
		if n.GetName() == name {
			return n
		}
	}
	fail(fmt.Errorf("no node %s", name))
	return nil
}

func attr(n *onnxpb.NodeProto, name string) *onnxpb.AttributeProto {
	for _, a := range n.Attribute {
		if a.GetName() == name {
			return a
		}
	}
	a := &onnxpb.AttributeProto{Name: proto.String(name)}
	n.Attribute = append(n.Attribute, a)
	return a
}

func setInts(n *onnxpb.NodeProto, name string, v ...int64) {
	a := attr(n, name)
	a.Type, a.Ints = onnxpb.AttributeProto_INTS.Enum(), v
}

func setInt(n *onnxpb.NodeProto, name string, v int64) {
	a := attr(n, name)
	a.Type, a.I = onnxpb.AttributeProto_INT.Enum(), proto.Int64(v)
}

func ints(name string, v ...int64) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_INTS.Enum(), Ints: v}
}

func setInput(g *onnxpb.GraphProto, dims ...int64) {
	g.Input[0].Type = valueInfo("", dims...).Type
}

func setInit(g *onnxpb.GraphProto, name string, dims ...int64) {
	for i, t := range g.Initializer {
		if t.GetName() == name {
			g.Initializer[i] = zeros(name, dims...)
			return
		}
	}
	fail(fmt.Errorf("no initializer %s", name))
}

func valueInfo(name string, dims ...int64) *onnxpb.ValueInfoProto {
	shape := &onnxpb.TensorShapeProto{}
	for _, d := range dims {
		shape.Dim = append(shape.Dim, &onnxpb.TensorShapeProto_Dimension{Value: &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: d}})
	}
	return &onnxpb.ValueInfoProto{Name: proto.String(name), Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{
		TensorType: &onnxpb.TypeProto_Tensor{ElemType: proto.Int32(int32(onnxpb.TensorProto_FLOAT)), Shape: shape}}}}
}

// zeros is a float initializer of dims holding small distinct values.
func zeros(name string, dims ...int64) *onnxpb.TensorProto {
	n := int64(1)
	for _, d := range dims {
		n *= d
	}
	raw := make([]byte, 4*n)
	for i := int64(0); i < n; i++ {
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(float32(i%7)/100))
	}
	return &onnxpb.TensorProto{Name: proto.String(name), Dims: dims, DataType: proto.Int32(int32(onnxpb.TensorProto_FLOAT)), RawData: raw}
}

func write(name string, m *onnxpb.ModelProto) {
	b, err := proto.Marshal(m)
	if err != nil {
		fail(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "hostile", name), b, 0o644); err != nil {
		fail(err)
	}
	fmt.Printf("%s: %d bytes\n", name, len(b))
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "gen:", err)
	os.Exit(1)
}
