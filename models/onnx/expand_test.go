package onnx

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/models/onnx/onnxpb"
)

// intConstNode is a Constant node of the int64 vector v.
func intConstNode(out string, v ...int64) *onnxpb.NodeProto {
	t := &onnxpb.TensorProto{DataType: proto.Int32(int32(onnxpb.TensorProto_INT64)), Dims: []int64{int64(len(v))}, Int64Data: v}
	return nd("Constant", out, nil, out, &onnxpb.AttributeProto{Name: proto.String("value"),
		Type: onnxpb.AttributeProto_TENSOR.Enum(), T: t})
}

// TestFoldExpand broadcasts constants as numpy does, both ways, and refuses
// dims that do not broadcast.
func TestFoldExpand(t *testing.T) {
	for _, c := range []struct {
		dims  []int
		vals  []int64
		shape []int64
		want  []int64
		wantD []int
	}{
		{[]int{3}, []int64{1, 2, 3}, []int64{2, 3}, []int64{1, 2, 3, 1, 2, 3}, []int{2, 3}},
		{[]int{2, 1}, []int64{1, 2}, []int64{2, 3}, []int64{1, 1, 1, 2, 2, 2}, []int{2, 3}},
		{[]int{2, 1}, []int64{1, 2}, []int64{1}, []int64{1, 2}, []int{2, 1}},
		{[]int{1}, []int64{7}, []int64{1, 1, 1, 1}, []int64{7}, []int{1, 1, 1, 1}},
	} {
		out, err := foldExpand([]*tensor{{dims: c.dims, ints: c.vals}, {dims: []int{len(c.shape)}, ints: c.shape}})
		if err != nil || !slices.Equal(out.ints, c.want) || !slices.Equal(out.dims, c.wantD) {
			t.Errorf("%v of %v to %v: %v %v, %v; want %v %v", c.vals, c.dims, c.shape, out.dims, out.ints, err, c.wantD, c.want)
		}
	}
	if _, err := foldExpand([]*tensor{{dims: []int{2}, ints: []int64{1, 2}}, {dims: []int{1}, ints: []int64{3}}}); !errors.Is(err, ErrShape) {
		t.Errorf("2 to 3: %v, want ErrShape", err)
	}
}

// TestExpandActivation: Expand of an activation by all ones is no layer;
// stretching an axis of 1 is a tile layer that repeats it; stretching an
// axis longer than 1, or the batch, is refused.
func TestExpandActivation(t *testing.T) {
	// x: N×2×4×4; r: its mean over the channels, N×1×4×4.
	mean := nd("ReduceMean", "rm", []string{"x"}, "r", attrInts("axes", 1), attrInt("keepdims", 1))
	build := func(shape ...int64) []byte {
		return tiny(11, headInits, withHead(mean, intConstNode("shape", shape...),
			nd("Expand", "ex", []string{"r", "shape"}, "h"))...)
	}
	f, err := Import(bytes.NewReader(build(1, 2, 4, 4)))
	if err != nil {
		t.Fatal(err)
	}
	ks := kinds(t, f)
	if !slices.Contains(ks, "tile") {
		t.Errorf("layers %v, want a tile", ks)
	}
	net, err := f.Build(cpu.NewCPU())
	if err != nil {
		t.Fatal(err)
	}
	if net.Out.Size() != 3 {
		t.Errorf("output %v", net.Out)
	}
	for _, c := range []struct {
		shape []int64
		want  string
	}{
		{[]int64{1, 1, 3, 4}, "do not broadcast"},
		{[]int64{2, 1, 4, 4}, "batch"},
		{[]int64{1, 1, 1, 4, 4}, "at most its rank"},
	} {
		if _, err := Import(bytes.NewReader(build(c.shape...))); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Expand to %v: %v, want an error saying %q", c.shape, err, c.want)
		}
	}
}
