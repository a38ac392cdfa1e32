package onnx

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/models/onnx/onnxpb"
	"github.com/cotrain/cotrain/solver"
	"google.golang.org/protobuf/proto"
)

func constInts(name string, v ...int64) *onnxpb.NodeProto {
	return nd("Constant", name, nil, name, &onnxpb.AttributeProto{
		Name: proto.String("value_ints"), Type: onnxpb.AttributeProto_INTS.Enum(), Ints: v})
}

// TestImportStructuralErrors: what the structural operators refuse, each
// error naming the node and the reason; and an operator that is still
// missing is refused with its name and node even after structural ones.
func TestImportStructuralErrors(t *testing.T) {
	cases := []struct {
		name  string
		raw   []byte
		want  error
		names []string
	}{
		{"transpose moves the batch", tiny(13, headInits, withHead(nd("Transpose", "tr", []string{"x"}, "h", attrInts("perm", 1, 0, 2, 3)))...),
			ErrUnsupported, []string{`"flat"`, "shape [2 -2 4 4]", "the batch axis moved"}},
		{"transpose without perm", tiny(13, headInits, withHead(nd("Transpose", "tr", []string{"x"}, "h"))...),
			ErrUnsupported, []string{`"tr"`, "reverses"}},
		{"slice the batch", tiny(13, headInits, withHead(constInts("st", 0), constInts("en", 1), constInts("ax", 0),
			nd("Slice", "sl", []string{"x", "st", "en", "ax"}, "h"))...), ErrUnsupported, []string{`"sl"`, "batch axis"}},
		{"slice negative step", tiny(13, headInits, withHead(constInts("st", -1), constInts("en", -10), constInts("ax", 3), constInts("sp", -1),
			nd("Slice", "sl", []string{"x", "st", "en", "ax", "sp"}, "h"))...), ErrUnsupported, []string{`"sl"`, "positive steps"}},
		{"pad wrap", tiny(13, headInits, withHead(constInts("p", 0, 0, 1, 1, 0, 0, 1, 1),
			nd("Pad", "pd", []string{"x", "p"}, "h", &onnxpb.AttributeProto{Name: proto.String("mode"),
				Type: onnxpb.AttributeProto_STRING.Enum(), S: []byte("wrap")}))...), ErrUnsupported, []string{`"pd"`, "wrap"}},
		{"reflect too long", tiny(13, headInits, withHead(constInts("p", 0, 0, 4, 0, 0, 0, 0, 0),
			nd("Pad", "pd", []string{"x", "p"}, "h", &onnxpb.AttributeProto{Name: proto.String("mode"),
				Type: onnxpb.AttributeProto_STRING.Enum(), S: []byte("reflect")}))...), ErrShape, []string{`"pd"`, "shorter than its axis"}},
		{"reduce max over channels", tiny(13, headInits, withHead(nd("ReduceMax", "rm", []string{"x"}, "h", attrInts("axes", 1)))...),
			ErrUnsupported, []string{`"rm"`, "spatial"}},
		{"reduce mean over the batch", tiny(13, headInits, withHead(nd("ReduceMean", "rm", []string{"x"}, "h", attrInts("axes", 0)))...),
			ErrUnsupported, []string{`"rm"`, "batch axis"}},
		{"flatten at axis 2", tiny(13, headInits, withHead(nd("Flatten", "fl", []string{"x"}, "h", attrInt("axis", 2)))...),
			ErrUnsupported, []string{`"fl"`, "into the batch axis"}},
		{"split sizes wrong", tiny(13, headInits, withHead(constInts("sz", 1, 2),
			nd("Split", "sp", []string{"x", "sz"}, "h", attrInt("axis", 1)))...), ErrShape, []string{`"sp"`, "for 1 outputs"}},
		{"mul of non-broadcasting", tiny(13, append(headInits, tinyInit{"k", []int{3, 1, 1}}),
			withHead(nd("Mul", "mu", []string{"x", "k"}, "h"))...), ErrShape, []string{`"mu"`, "do not broadcast"}},
		{"constant with a batch", tiny(13, append(headInits, tinyInit{"k", []int{2, 2, 1, 1}}),
			withHead(nd("Mul", "mu", []string{"x", "k"}, "h"))...), ErrUnsupported, []string{`"mu"`, "batch axis of 2"}},
		{"square", tiny(13, headInits, withHead(nd("Mul", "sq", []string{"x", "x"}, "h"))...),
			ErrUnsupported, []string{`"sq"`, "with itself"}},
		{"missing op after structural ones", tiny(13, headInits, withHead(
			nd("Transpose", "tr", []string{"x"}, "t", attrInts("perm", 0, 1, 3, 2)),
			nd("Einsum", "es_3", []string{"t"}, "h"))...), ErrUnsupported, []string{"Einsum", `"es_3"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Import(bytes.NewReader(tc.raw))
			if f != nil || !errors.Is(err, tc.want) {
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

// runTiny imports raw, runs one sample x forward and returns the output.
func runTiny(t *testing.T, raw []byte, x []float32) []float32 {
	t.Helper()
	f, err := Import(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	net, err := f.Build(cpu.NewCPU())
	if err != nil {
		t.Fatal(err)
	}
	return forward(net, x)
}

// TestImportSplitAndPendingPad: a Split into equal parts without sizes
// (two slice layers) whose halves a Concat swaps, and a symmetric zero Pad
// that no Conv consumes (it becomes a pad layer), computed by hand.
func TestImportSplitAndPendingPad(t *testing.T) {
	x := make([]float32, 2*4*4)
	for i := range x {
		x[i] = float32(i + 1)
	}
	split := &onnxpb.NodeProto{OpType: proto.String("Split"), Name: proto.String("sp"), Input: []string{"x"},
		Output: []string{"top", "bottom"}, Attribute: []*onnxpb.AttributeProto{attrInt("axis", 2)}}
	got := runTiny(t, tiny(13, nil, split, nd("Concat", "cat", []string{"bottom", "top"}, "y", attrInt("axis", 2))), x)
	for c := range 2 {
		for h := range 4 {
			for w := range 4 {
				want := x[c*16+((h+2)%4)*4+w]
				if g := got[c*16+h*4+w]; g != want {
					t.Fatalf("split and swap: [%d,%d,%d] = %v, want %v", c, h, w, g, want)
				}
			}
		}
	}
	got = runTiny(t, tiny(13, nil, constInts("p", 0, 0, 1, 1, 0, 0, 1, 1), nd("Pad", "pd", []string{"x", "p"}, "px"),
		nd("Relu", "r", []string{"px"}, "y")), x)
	if len(got) != 2*6*6 {
		t.Fatalf("padded output of %d values, want 72", len(got))
	}
	for c := range 2 {
		for h := range 6 {
			for w := range 6 {
				want := float32(0)
				if h >= 1 && h <= 4 && w >= 1 && w <= 4 {
					want = x[c*16+(h-1)*4+w-1]
				}
				if g := got[c*36+h*6+w]; g != want {
					t.Fatalf("pad: [%d,%d,%d] = %v, want %v", c, h, w, g, want)
				}
			}
		}
	}
}

// TestKnownOpsAreMapped: every operator Import's first pass lets through
// reaches a case of node's switch (the ones folded on constants are given a
// constant input), so the first pass never admits what node would then
// refuse as an unknown operator.
func TestKnownOpsAreMapped(t *testing.T) {
	for op := range knownOps {
		im := &importer{opset: 13, vals: map[string]*value{"c": {konst: &tensor{name: "c", ints: []int64{1}, dims: []int{1}}}},
			uses: map[string]int{}, names: map[string]bool{}, params: map[string]*tensor{}, state: map[string]*tensor{}}
		ins := []string{}
		if op == "Cast" || op == "ConstantOfShape" {
			ins = []string{"c"}
		}
		err := im.node(nd(op, "n", ins, "out"), "y")
		if err != nil && strings.Contains(err.Error(), "unsupported operator "+op) {
			t.Errorf("%s passes the first check but node refuses it: %v", op, err)
		}
	}
}

// TestUnknownOpRefusedFirst: an unknown operator late in the graph is
// refused by name even when an earlier node is broken too.
func TestUnknownOpRefusedFirst(t *testing.T) {
	raw := tiny(13, headInits, withHead(nd("Conv", "conv", []string{"x", "missing.weight"}, "c"),
		nd("GridSample", "warp_9", []string{"c"}, "h"))...)
	_, err := Import(bytes.NewReader(raw))
	if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "GridSample") || !strings.Contains(err.Error(), `"warp_9"`) {
		t.Fatalf("error %v, want the unsupported GridSample of node warp_9", err)
	}
}

// TestImportShapeOfPaddedAndUnusedSplit: Shape sees a pending pad, and a
// Split part that nothing reads makes no layer.
func TestImportShapeOfPaddedAndUnusedSplit(t *testing.T) {
	x := make([]float32, 2*4*4)
	for i := range x {
		x[i] = float32(i)
	}
	// Pad H and W by 1 (6×6), then Reshape to [N, C, H·W]: the 72 padded values.
	nodes := []*onnxpb.NodeProto{constInts("p", 0, 0, 1, 1, 0, 0, 1, 1), nd("Pad", "pd", []string{"x", "p"}, "px"),
		constInts("k", -1, 2, 36), nd("Reshape", "rs", []string{"px", "k"}, "r3"), nd("Relu", "r", []string{"r3"}, "y")}
	if got := runTiny(t, tiny(13, nil, nodes...), x); len(got) != 72 || got[0] != 0 || got[7] != x[0] {
		t.Fatalf("%d outputs starting %v, want 72 with the first input value at 7", len(got), got[:8])
	}
	im := &importer{opset: 13, vals: map[string]*value{"x": {act: true, layer: -1, shape: solver.Shape{C: 2, H: 4, W: 4}, rank: 4, pad: [2]int{1, 2}}},
		uses: map[string]int{}, names: map[string]bool{}}
	if err := im.node(nd("Shape", "sh", []string{"x"}, "s"), "y"); err != nil {
		t.Fatal(err)
	}
	if got := im.vals["s"].sym[1:]; !slices.Equal(got, []int64{2, 6, 8}) {
		t.Errorf("Shape of a padded 2×4×4 (pads 1, 2): %v, want [2 6 8]", got)
	}
	split := &onnxpb.NodeProto{OpType: proto.String("Split"), Name: proto.String("sp"), Input: []string{"x"},
		Output: []string{"top", "bottom"}, Attribute: []*onnxpb.AttributeProto{attrInt("axis", 2)}}
	got := runTiny(t, tiny(13, nil, split, nd("Relu", "r", []string{"bottom"}, "y")), x)
	if len(got) != 2*2*4 || got[0] != x[8] {
		t.Fatalf("bottom half: %d values starting %v, want 16 starting %v", len(got), got[0], x[8])
	}
}
