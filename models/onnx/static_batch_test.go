package onnx

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/cotrain/cotrain/models/onnx/onnxpb"
	"google.golang.org/protobuf/proto"
)

// TestModFolds: Mod of integer constants takes the divisor's sign (fmod 0,
// Python's %) or the dividend's (fmod 1, C's fmod); by zero, or of the
// batch size, it is refused.
func TestModFolds(t *testing.T) {
	ints := func(v ...int64) *value { return &value{konst: &tensor{ints: v, dims: []int{len(v)}}} }
	cases := []struct {
		fmod      int64
		p, q, out []int64
	}{
		{0, []int64{7, -7, 7, -7, 2}, []int64{3, 3, -3, -3, 3}, []int64{1, 2, -2, -1, 2}},
		{1, []int64{7, -7, 7, -7, 2}, []int64{3, 3, -3, -3, 3}, []int64{1, -1, 1, -1, 2}},
		{0, []int64{5, 6, 7}, []int64{4}, []int64{1, 2, 3}},
	}
	for _, tc := range cases {
		im := &importer{vals: map[string]*value{"p": ints(tc.p...), "q": ints(tc.q...)}}
		n := nd("Mod", "m", []string{"p", "q"}, "r", attrInt("fmod", int(tc.fmod)))
		if err := im.mod(n, nodeAttrs(n)); err != nil {
			t.Fatal(err)
		}
		if got := im.vals["r"].konst.ints; !slices.Equal(got, tc.out) {
			t.Errorf("Mod(%v, %v) fmod %d = %v, want %v", tc.p, tc.q, tc.fmod, got, tc.out)
		}
	}
	im := &importer{vals: map[string]*value{"p": ints(1), "z": ints(0), "n": {sym: []int64{batchDim}}}}
	for _, in := range [][]string{{"p", "z"}, {"n", "p"}} {
		n := nd("Mod", "m", in, "r")
		if err := im.mod(n, nodeAttrs(n)); err == nil {
			t.Errorf("Mod(%s, %s) folded", in[0], in[1])
		}
	}
}

// TestStaticBatchViews: nn.MultiheadAttention's pattern as an export at a
// static batch of 1 writes it, every shape a number: x (N×2×4×4) to
// 2×N×4×4, Reshape [2 4 4] (2×(N·4)×4: the batch is the outer factor of
// the axis after the 2 elements before it), Unsqueeze(0), Transpose,
// Squeeze, Reshape [2 1 4 4] back, the Transpose back and a Relu: relu(x),
// for a batch of 2 as for 1. The same with [2 8 4], which does not hold a
// sample's 32 elements at batch 1, is refused naming the node.
func TestStaticBatchViews(t *testing.T) {
	graph := func(target ...int64) []byte {
		return tiny(13, nil,
			nd("Transpose", "t1", []string{"x"}, "t1", attrInts("perm", 1, 0, 2, 3)),
			constInts("s1", target...), nd("Reshape", "r1", []string{"t1", "s1"}, "r1"),
			constInts("ax0", 0), nd("Unsqueeze", "u", []string{"r1", "ax0"}, "u"), // 1×2×(N·4)×4
			nd("Transpose", "t2", []string{"u"}, "t2", attrInts("perm", 1, 2, 0, 3)), // 2×(N·4)×1×4
			constInts("ax2", 2), nd("Squeeze", "sq", []string{"t2", "ax2"}, "sq"),
			constInts("s2", 2, 1, 4, 4), nd("Reshape", "r2", []string{"sq", "s2"}, "r2"),
			nd("Transpose", "t3", []string{"r2"}, "t3", attrInts("perm", 1, 0, 2, 3)),
			nd("Relu", "relu", []string{"t3"}, "y"))
	}
	x := make([]float32, 2*2*4*4)
	for i := range x {
		x[i] = float32(i%7) - 3
	}
	got := runTiny(t, graph(2, 4, 4), x)
	for i, v := range x {
		if want := max(v, 0); got[i] != want {
			t.Fatalf("output %d = %v, want %v", i, got[i], want)
		}
	}
	_, err := Import(bytes.NewReader(graph(2, 8, 4)))
	if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), `"r1"`) {
		t.Errorf("Reshape to [2 8 4]: %v, want %v naming r1", err, ErrUnsupported)
	}
}

// TestClassTokenAtBatch1: a float initializer of 1×1×4 (the class token as
// the dynamo exporter folds its expand at a static batch of 1) concatenated
// before an activation of N×3×4 along axis 1 is a prepend layer: every
// sample gets the token first.
func TestClassTokenAtBatch1(t *testing.T) {
	tok := []float32{9, 8, 7, 6}
	var m onnxpb.ModelProto
	if err := proto.Unmarshal(tiny(13, nil,
		constInts("s", 1, 8, 4), nd("Reshape", "r", []string{"x", "s"}, "r"),
		nd("Concat", "cat", []string{"class_token", "r"}, "y", attrInt("axis", 1))), &m); err != nil {
		t.Fatal(err)
	}
	(&exporter{g: m.GetGraph()}).initializer("class_token", []int{1, 1, 4}, tok)
	raw, err := proto.Marshal(&m)
	if err != nil {
		t.Fatal(err)
	}
	x := make([]float32, 2*32)
	for i := range x {
		x[i] = float32(i)
	}
	got := runTiny(t, raw, x)
	if len(got) != 2*36 {
		t.Fatalf("%d outputs, want 72", len(got))
	}
	for s := range 2 {
		if o := got[s*36 : s*36+36]; !slices.Equal(o[:4], tok) || !slices.Equal(o[4:], x[s*32:s*32+32]) {
			t.Errorf("sample %d: %v", s, o)
		}
	}
}
