package onnx

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/models/onnx/onnxpb"
	"google.golang.org/protobuf/proto"
)

// tiny builds a model: input "x" (batch×2×4×4), the given nodes, output "y".
// Initializers named in inits get float data of the given dims.
type tinyInit struct {
	name string
	dims []int
}

func tiny(opset int64, inits []tinyInit, nodes ...*onnxpb.NodeProto) []byte {
	g := &onnxpb.GraphProto{Node: nodes,
		Input:  []*onnxpb.ValueInfoProto{valueInfo("x", "N", 2, 4, 4)},
		Output: []*onnxpb.ValueInfoProto{valueInfo("y", "N", 3)}}
	e := &exporter{g: g}
	for _, in := range inits {
		n := 1
		for _, d := range in.dims {
			n *= d
		}
		e.initializer(in.name, in.dims, make([]float32, n))
	}
	raw, err := proto.Marshal(&onnxpb.ModelProto{IrVersion: proto.Int64(7), Graph: g,
		OpsetImport: []*onnxpb.OperatorSetIdProto{{Version: proto.Int64(opset)}}})
	if err != nil {
		panic(err)
	}
	return raw
}

func nd(op, name string, ins []string, out string, attrs ...*onnxpb.AttributeProto) *onnxpb.NodeProto {
	return &onnxpb.NodeProto{OpType: proto.String(op), Name: proto.String(name), Input: ins, Output: []string{out}, Attribute: attrs}
}

// A valid head: flatten then a linear layer to the 3 outputs.
var head = []*onnxpb.NodeProto{
	nd("Flatten", "flat", []string{"h"}, "f"),
	nd("Gemm", "fc", []string{"f", "fc.weight", "fc.bias"}, "y", attrInt("transB", 1)),
}

var headInits = []tinyInit{{"fc.weight", []int{3, 32}}, {"fc.bias", []int{3}}}

func withHead(first ...*onnxpb.NodeProto) []*onnxpb.NodeProto { return append(first, head...) }

func TestImportErrors(t *testing.T) {
	fixture, err := os.ReadFile("testdata/lenet5_softmax_op9.onnx")
	if err != nil {
		t.Fatal(err)
	}
	conv := func(w string, attrs ...*onnxpb.AttributeProto) *onnxpb.NodeProto {
		return nd("Conv", "conv", []string{"x", w}, "h", attrs...)
	}
	cases := []struct {
		name  string
		raw   []byte
		want  error
		names []string // strings the message must contain
	}{
		{"not protobuf", []byte("\xff\xff\xff\xff garbage"), ErrMalformed, nil},
		{"truncated file", fixture[:len(fixture)/2], ErrMalformed, nil},
		{"empty", nil, ErrMalformed, []string{"no graph"}},
		{"unsupported op", tiny(13, headInits, withHead(nd("RNN", "rnn_7", []string{"x"}, "h"))...),
			ErrUnsupported, []string{"RNN", `"rnn_7"`}},
		{"time-major LSTM", tiny(13, headInits, withHead(nd("LSTM", "lstm_7", []string{"x"}, "h"))...),
			ErrUnsupported, []string{"LSTM", `"lstm_7"`, "batch-first"}},
		{"custom domain", tiny(13, headInits, withHead(&onnxpb.NodeProto{OpType: proto.String("Relu"), Domain: proto.String("com.example"),
			Name: proto.String("r"), Input: []string{"x"}, Output: []string{"h"}})...), ErrUnsupported, []string{"com.example"}},
		{"missing initializer", tiny(13, headInits, withHead(conv("conv.weight"))...),
			ErrMissing, []string{`"conv.weight"`, `"conv"`}},
		{"weight from an activation", tiny(13, headInits, withHead(nd("Conv", "conv", []string{"x", "x"}, "h"))...),
			ErrUnsupported, []string{"initializer"}},
		{"conv channels wrong", tiny(13, append(headInits, tinyInit{"conv.weight", []int{2, 3, 1, 1}}), withHead(conv("conv.weight"))...),
			ErrShape, []string{"conv"}},
		{"gemm features wrong", tiny(13, []tinyInit{{"fc.weight", []int{3, 31}}, {"fc.bias", []int{3}}},
			nd("Flatten", "flat", []string{"x"}, "f"), nd("Gemm", "fc", []string{"f", "fc.weight", "fc.bias"}, "y", attrInt("transB", 1))),
			ErrShape, []string{"fc.weight", "32 input features"}},
		{"gemm bias wrong", tiny(13, []tinyInit{{"fc.weight", []int{3, 32}}, {"fc.bias", []int{4}}},
			nd("Flatten", "flat", []string{"x"}, "f"), nd("Gemm", "fc", []string{"f", "fc.weight", "fc.bias"}, "y", attrInt("transB", 1))),
			ErrShape, []string{"fc.bias"}},
		{"batch norm scale wrong", tiny(13, append(headInits, tinyInit{"bn.weight", []int{3}}, tinyInit{"bn.bias", []int{2}},
			tinyInit{"bn.running_mean", []int{2}}, tinyInit{"bn.running_var", []int{2}}),
			withHead(nd("BatchNormalization", "bn", []string{"x", "bn.weight", "bn.bias", "bn.running_mean", "bn.running_var"}, "h"))...),
			ErrShape, []string{"bn.weight"}},
		{"asymmetric pads not counted", tiny(13, headInits,
			withHead(nd("AveragePool", "pool", []string{"x"}, "h", attrInts("kernel_shape", 2, 2), attrInts("pads", 1, 1, 0, 0)))...),
			ErrUnsupported, []string{"asymmetric", "count_include_pad=0", "pool"}},
		{"convtranspose output_shape too large", tiny(13, append(headInits, tinyInit{"t.weight", []int{2, 2, 1, 1}}),
			withHead(nd("ConvTranspose", "t", []string{"x", "t.weight"}, "h", attrInts("output_shape", 5, 4)))...),
			ErrUnsupported, []string{`"t"`, "output_shape [5 4] larger than the unpadded output", "output_padding"}},
		{"convtranspose output_padding past the stride", tiny(13, append(headInits, tinyInit{"t.weight", []int{2, 2, 3, 3}}),
			withHead(nd("ConvTranspose", "t", []string{"x", "t.weight"}, "h", attrInts("dilations", 2, 2), attrInts("output_padding", 1, 1)))...),
			ErrShape, []string{`"t"`, "output padding 1x1 not below the stride 1x1"}},
		{"convtranspose channels", tiny(13, append(headInits, tinyInit{"t.weight", []int{3, 2, 1, 1}}),
			withHead(nd("ConvTranspose", "t", []string{"x", "t.weight"}, "h"))...),
			ErrShape, []string{`"t"`, "2 input channels"}},
		{"matmul ranks differ", tiny(11, headInits, withHead(
			nd("ReduceMean", "rm", []string{"x"}, "r", attrInts("axes", 1), attrInt("keepdims", 0)),
			nd("MatMul", "mm", []string{"x", "r"}, "h"))...),
			ErrUnsupported, []string{`"mm"`, "[2 4 4] and [4 4]", "unsqueeze"}},
		{"dilated pool with asymmetric pads", tiny(13, headInits,
			withHead(nd("MaxPool", "pool", []string{"x"}, "h", attrInts("kernel_shape", 2, 2), attrInts("dilations", 2, 2),
				attrInts("pads", 0, 0, 1, 1)))...),
			ErrUnsupported, []string{`"pool"`, "MaxPool with dilations [2 2] and asymmetric pads [0 0 1 1]", "symmetric padding"}},
		{"clip bounds inverted", tiny(9, headInits, withHead(nd("Clip", "clip", []string{"x"}, "h", attrFloat("min", 3), attrFloat("max", 1)))...),
			ErrUnsupported, []string{`"clip"`, "Clip bounds [3, 1]"}},
		{"softmax over the batch", tiny(13, headInits, withHead(nd("Softmax", "sm", []string{"x"}, "h", attrInt("axis", 0)))...),
			ErrUnsupported, []string{`"sm"`, "axis 0, the batch"}},
		{"softmax axis out of range", tiny(11, headInits, withHead(nd("Softmax", "sm", []string{"x"}, "h", attrInt("axis", 4)))...),
			ErrMalformed, []string{`"sm"`, "axis 4 of a rank-4 input"}},
		{"leakyrelu alpha not finite", tiny(13, headInits, withHead(nd("LeakyRelu", "lr", []string{"x"}, "h", attrFloat("alpha", float32(math.Inf(1)))))...),
			ErrMalformed, []string{`"lr"`, "alpha +Inf"}},
		{"reshape into the batch", tiny(13, headInits, withHead(nd("Constant", "shape", nil, "s", &onnxpb.AttributeProto{
			Name: proto.String("value_ints"), Type: onnxpb.AttributeProto_INTS.Enum(), Ints: []int64{-1, 3, 16}}),
			nd("Reshape", "rs", []string{"x", "s"}, "h"))...), ErrUnsupported, []string{`"rs"`, "[-1 3 16]", "48 elements per sample"}},
		{"opset too old", tiny(5, headInits, withHead(nd("Relu", "r", []string{"x"}, "h"))...), ErrUnsupported, []string{"opset 5"}},
		{"output not computed", tiny(13, headInits, nd("Relu", "r", []string{"x"}, "h")), ErrMissing, []string{`"y"`}},
		{"max pool indices used", tiny(13, headInits, withHead(&onnxpb.NodeProto{OpType: proto.String("MaxPool"), Name: proto.String("mp"),
			Input: []string{"x"}, Output: []string{"h", "idx"}, Attribute: []*onnxpb.AttributeProto{attrInts("kernel_shape", 1, 1)}},
			nd("Relu", "r2", []string{"idx"}, "unused"))...), ErrUnsupported, []string{`"idx"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Import(bytes.NewReader(tc.raw))
			if !errors.Is(err, tc.want) {
				t.Fatalf("got file %v, error %v; want %v", f != nil, err, tc.want)
			}
			for _, s := range tc.names {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not name %s", err, s)
				}
			}
		})
	}
}

// TestImportTinyGraphs checks the hand-built graph the error cases start
// from, so that each error case fails for its own reason only.
func TestImportTinyGraphs(t *testing.T) {
	raw := tiny(13, append(headInits, tinyInit{"conv.weight", []int{2, 2, 3, 3}}),
		withHead(nd("Conv", "conv", []string{"x", "conv.weight"}, "h", attrInts("pads", 1, 1, 1, 1)))...)
	f, err := Import(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	net, err := f.Build(cpu.NewCPU())
	if err != nil {
		t.Fatal(err)
	}
	if net.NumParams() != 2*2*9+3*32+3 {
		t.Errorf("%d parameters", net.NumParams())
	}
}

func TestBuildErrors(t *testing.T) {
	good := importFile(t, "testdata/inception_lite_op9.onnx")
	withGraph := func(g string) *models.File {
		f := *good
		f.Meta = [][2]string{{models.MetaGraph, g}}
		return &f
	}
	cases := []struct {
		name string
		file *models.File
		want error
	}{
		{"no graph", withGraph(""), models.ErrGraph},
		{"bad json", withGraph("[{"), models.ErrGraph},
		{"unknown kind", withGraph(`[{"kind":"lstm","name":"r"}]`), models.ErrGraph},
		{"weights do not fit", withGraph(`[{"kind":"conv2d","name":"stem","out":9,"kh":3,"kw":3,"sh":1,"sw":1,"groups":1},{"kind":"globalavgpool","name":"g"},{"kind":"linear","name":"fc","out":5}]`),
			models.ErrModelMismatch},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := tc.file.Build(cpu.NewCPU()); !errors.Is(err, tc.want) {
				t.Errorf("error %v, want %v", err, tc.want)
			}
			if err := Export(&bytes.Buffer{}, tc.file); err == nil {
				t.Error("export succeeded")
			}
		})
	}
}

// FuzzImport feeds arbitrary bytes to Import: it must return an error or a
// file, never panic nor allocate without bound, and a file it returns must
// lay out (models.File.Plan) exactly the tensors it holds and build. Its
// seeds include the real exports under testdata of at most 300 KB (larger
// ones make mutation slow) and issue 28's crafted models.
func FuzzImport(f *testing.F) {
	for _, pattern := range []string{"testdata/*.onnx", "testdata/hostile/*.onnx"} {
		paths, err := filepath.Glob(pattern)
		if err != nil {
			f.Fatal(err)
		}
		for _, path := range paths {
			if st, err := os.Stat(path); err == nil && st.Size() <= 300<<10 {
				raw, err := os.ReadFile(path)
				if err != nil {
					f.Fatal(err)
				}
				f.Add(raw)
			}
		}
	}
	f.Add(tiny(13, headInits, withHead(nd("Relu", "r", []string{"x"}, "h"))...))
	f.Add([]byte{0x08, 0x07})
	// Activations: the fused x*HardSigmoid(x), clips, a softmax inside.
	for _, name := range []string{"hard_op13", "clip_op11", "softmax_op13"} {
		if raw, err := os.ReadFile(filepath.Join("testdata", "acts", name+".onnx")); err == nil {
			f.Add(raw)
		}
	}
	f.Add(tiny(11, headInits, withHead(nd("Softmax", "sm", []string{"x"}, "h", attrInt("axis", 2)))...))
	// The structural operators: a channel shuffle (Reshape, Transpose,
	// Split, Concat), SE gates (ReduceMean, Mul), Pad, Slice and
	// reductions, and tf2onnx's NHWC transposes.
	for _, name := range []string{"shuffle_op11", "se_op13", "misc_op13", "nhwc_op13"} {
		if raw, err := os.ReadFile(filepath.Join("testdata", "struct", name+".onnx")); err == nil {
			f.Add(raw)
		}
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		file, err := Import(bytes.NewReader(raw))
		if err != nil {
			return
		}
		lay, err := file.Plan()
		if err != nil {
			t.Fatalf("imported a model that does not lay out: %v", err)
		}
		if len(lay.Params) != len(file.Params) {
			t.Fatalf("%d parameter tensors for a layout of %d", len(file.Params), len(lay.Params))
		}
		for i, p := range file.Params {
			if len(p.Data) != lay.Params[i].Spec.Size() {
				t.Fatalf("tensor %s: %d values for %v", p.Name, len(p.Data), lay.Params[i].Dims)
			}
		}
		if _, err := file.Build(cpu.NewCPU()); err != nil {
			t.Errorf("imported file does not build: %v", err)
		}
	})
}
