package onnx

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/models/onnx/onnxpb"
	"google.golang.org/protobuf/proto"
)

// TestBatchViews imports the batch-moving pattern of nn.MultiheadAttention
// on x (N×2×4×4): Transpose(1, 0, 2, 3) to 2×N×4×4, a Reshape to
// 2×(N·4)×4 whose shape comes from Shape, Gather and Mul (the batch size
// times 4), a Reshape back to 2×N×4×4, the Transpose back and a Relu. No
// layer but the Relu moves data (views.go), and the output is relu(x).
func TestBatchViews(t *testing.T) {
	x := make([]float32, 2*4*4)
	for i := range x {
		x[i] = float32(i%7) - 3
	}
	gather := func(name, from string, idx int64) *onnxpb.NodeProto {
		return nd("Gather", name, []string{from, name + ".i"}, name, attrInt("axis", 0))
	}
	nodes := []*onnxpb.NodeProto{
		nd("Transpose", "t1", []string{"x"}, "t1", attrInts("perm", 1, 0, 2, 3)),
		nd("Shape", "s", []string{"t1"}, "s"),
		constScalar("n.i", 1), gather("n", "s", 1), // N
		constScalar("four", 4), nd("Mul", "n4", []string{"n", "four"}, "n4"), // N·4
		constInts("ax", 0), nd("Unsqueeze", "n4v", []string{"n4", "ax"}, "n4v"), nd("Unsqueeze", "nv", []string{"n", "ax"}, "nv"),
		constInts("two", 2), constInts("last", 4),
		nd("Concat", "shape1", []string{"two", "n4v", "last"}, "shape1", attrInt("axis", 0)),
		nd("Reshape", "r1", []string{"t1", "shape1"}, "r1"), // 2×(N·4)×4
		nd("Concat", "shape2", []string{"two", "nv", "last", "last"}, "shape2", attrInt("axis", 0)),
		nd("Reshape", "r2", []string{"r1", "shape2"}, "r2"), // 2×N×4×4
		nd("Transpose", "t2", []string{"r2"}, "t2", attrInts("perm", 1, 0, 2, 3)),
		nd("Relu", "relu", []string{"t2"}, "y"),
	}
	raw := tiny(13, nil, nodes...)
	f, err := Import(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(f.MetaValue(models.MetaGraph), `"kind"`); got != 1 {
		t.Errorf("%d layers, want the Relu alone: %s", got, f.MetaValue(models.MetaGraph))
	}
	got := runTiny(t, raw, x)
	for i, v := range x {
		if want := max(v, 0); got[i] != want {
			t.Fatalf("output %d = %v, want %v", i, got[i], want)
		}
	}
}

// constScalar is a Constant node of one int64 of rank 0.
func constScalar(name string, v int64) *onnxpb.NodeProto {
	return nd("Constant", name, nil, name, &onnxpb.AttributeProto{Name: proto.String("value_int"),
		Type: onnxpb.AttributeProto_INT.Enum(), I: proto.Int64(v)})
}

// TestBatchViewErrors: a view read where the batch is not the first axis,
// and shape arithmetic that would need the batch size's value, are
// refused, naming the node.
func TestBatchViewErrors(t *testing.T) {
	cases := []struct {
		name  string
		raw   []byte
		names []string
	}{
		{"softmax over the batch's axis", tiny(13, headInits, withHead(
			nd("Transpose", "tr", []string{"x"}, "t", attrInts("perm", 1, 2, 3, 0)),
			nd("Softmax", "sm", []string{"t"}, "s", attrInt("axis", -1)),
			nd("Transpose", "back", []string{"s"}, "h", attrInts("perm", 3, 0, 1, 2)))...),
			[]string{`"sm"`, "holds the batch"}},
		{"batch size compared with 2", tiny(13, headInits, withHead(
			nd("Shape", "s", []string{"x"}, "s"), constInts("two", 2, 2, 4, 4),
			nd("Equal", "eq", []string{"s", "two"}, "e"),
			nd("Where", "wh", []string{"e", "two", "s"}, "w"),
			nd("Reshape", "r", []string{"x", "w"}, "h"))...),
			[]string{`"eq"`, "which it may be"}},
		{"batch size squared", tiny(13, headInits, withHead(
			nd("Shape", "s", []string{"x"}, "s"), constInts("i", 0), nd("Gather", "g", []string{"s", "i"}, "n", attrInt("axis", 0)),
			nd("Mul", "sq", []string{"n", "n"}, "n2"), constInts("rest", 2, 4, 4),
			nd("Concat", "c", []string{"n2", "rest"}, "shape", attrInt("axis", 0)),
			nd("Reshape", "r", []string{"x", "shape"}, "h"))...),
			[]string{`"sq"`, "batch size"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Import(bytes.NewReader(tc.raw))
			if f != nil || !errors.Is(err, ErrUnsupported) {
				t.Fatalf("got file %v, error %v; want %v", f != nil, err, ErrUnsupported)
			}
			for _, s := range tc.names {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not name %s", err, s)
				}
			}
		})
	}
}

// TestBatchMultiples: the shape values k·N keep k through the arithmetic
// and print as -2·k.
func TestBatchMultiples(t *testing.T) {
	for _, k := range []int64{1, 2, 17, 1 << 20} {
		if got, ok := batchMul(batchTimes(k)); !ok || got != k {
			t.Errorf("batchMul(batchTimes(%d)) = %d, %v", k, got, ok)
		}
	}
	for _, v := range []int64{0, -1, 1, 1 << 40} {
		if _, ok := batchMul(v); ok {
			t.Errorf("%d read as a multiple of the batch size", v)
		}
	}
	if got := showShape([]int64{batchDim, 3, batchTimes(4)}); strings.Join(got, " ") != "-2 3 -2·4" {
		t.Errorf("showShape = %v", got)
	}
}

// TestAttentionScaleFolds: the scale torch's scaled_dot_product_attention
// export computes from the shape, 1/√d (Shape, Slice of the last entry,
// Cast to float, Sqrt, Div of 1 by it, then Sqrt again for each operand),
// folds to a constant, so x·scale is one layer: here x·√(1/√4).
func TestAttentionScaleFolds(t *testing.T) {
	x := make([]float32, 2*4*4)
	for i := range x {
		x[i] = float32(i%5) - 2
	}
	one := &onnxpb.NodeProto{OpType: proto.String("Constant"), Name: proto.String("one"), Output: []string{"one"},
		Attribute: []*onnxpb.AttributeProto{{Name: proto.String("value_float"), Type: onnxpb.AttributeProto_FLOAT.Enum(), F: proto.Float32(1)}}}
	raw := tiny(13, nil,
		nd("Shape", "s", []string{"x"}, "s"), constInts("st", -1), constInts("en", 1<<40),
		nd("Slice", "d", []string{"s", "st", "en"}, "d"),
		nd("Cast", "df", []string{"d"}, "df", attrInt("to", int(onnxpb.TensorProto_FLOAT))),
		nd("Sqrt", "sq", []string{"df"}, "sq"), one, nd("Div", "inv", []string{"one", "sq"}, "inv"),
		nd("Sqrt", "scale", []string{"inv"}, "scale"),
		nd("Mul", "mul", []string{"x", "scale"}, "y"))
	f, err := Import(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(f.MetaValue(models.MetaGraph), `"kind"`); got != 1 {
		t.Errorf("%d layers, want the Mul alone", got)
	}
	got := runTiny(t, raw, x)
	scale := float32(math.Sqrt(0.5))
	for i, v := range x {
		if want := v * scale; math.Abs(float64(got[i]-want)) > 1e-6 {
			t.Fatalf("output %d = %v, want %v", i, got[i], want)
		}
	}
}
