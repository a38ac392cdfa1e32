package onnx

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/models/onnx/onnxpb"
	"google.golang.org/protobuf/proto"
)

func attrStr(name, v string) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_STRING.Enum(), S: []byte(v)}
}

func constFloats(name string, v ...float32) *onnxpb.NodeProto {
	return nd("Constant", name, nil, name, &onnxpb.AttributeProto{
		Name: proto.String("value_floats"), Type: onnxpb.AttributeProto_FLOATS.Enum(), Floats: v})
}

// resizeHead is a head for an N×2×8×8 activation h: flatten, then a
// linear layer to the 3 outputs.
var resizeHead = []tinyInit{{"fc.weight", []int{3, 128}}, {"fc.bias", []int{3}}}

// TestImportResizeOpsets: Upsample with its scales as an attribute (opset
// 7) and as an input (9), and Resize with scales (10, 13) or sizes (13,
// and 18 through axes), import as the same nearest ×2 resample layer.
func TestImportResizeOpsets(t *testing.T) {
	want := models.Layer{Kind: "resample", Name: "up", Dims: []int{2, 4, 4}, To: []int{2, 8, 8}, Mode: "nearest",
		Coord: "asymmetric", Nearest: "floor", Scales: []float32{2, 2}}
	onnx11 := []*onnxpb.AttributeProto{attrStr("mode", "nearest"), attrStr("coordinate_transformation_mode", "asymmetric"),
		attrStr("nearest_mode", "floor")}
	bySizes := want
	bySizes.Scales = nil
	for _, tc := range []struct {
		name  string
		opset int64
		nodes []*onnxpb.NodeProto
		want  models.Layer
	}{
		{"Upsample-7", 7, []*onnxpb.NodeProto{nd("Upsample", "up", []string{"x"}, "h", attrStr("mode", "nearest"),
			&onnxpb.AttributeProto{Name: proto.String("scales"), Type: onnxpb.AttributeProto_FLOATS.Enum(), Floats: []float32{1, 1, 2, 2}})}, want},
		{"Upsample-9", 9, []*onnxpb.NodeProto{constFloats("s", 1, 1, 2, 2), nd("Upsample", "up", []string{"x", "s"}, "h")}, want},
		{"Resize-10", 10, []*onnxpb.NodeProto{constFloats("s", 1, 1, 2, 2), nd("Resize", "up", []string{"x", "s"}, "h")}, want},
		{"Resize-13 scales", 13, []*onnxpb.NodeProto{constFloats("s", 1, 1, 2, 2), nd("Resize", "up", []string{"x", "", "s"}, "h", onnx11...)}, want},
		{"Resize-13 sizes", 13, []*onnxpb.NodeProto{constInts("z", 5, 2, 8, 8), nd("Resize", "up", []string{"x", "", "", "z"}, "h", onnx11...)}, bySizes},
		{"Resize-18 axes", 18, []*onnxpb.NodeProto{constInts("z", 8, 8),
			nd("Resize", "up", []string{"x", "", "", "z"}, "h", append(onnx11, attrInts("axes", 2, 3))...)}, bySizes},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Import(bytes.NewReader(tiny(tc.opset, resizeHead, append(tc.nodes, head...)...)))
			if err != nil {
				t.Fatal(err)
			}
			var layers []models.Layer
			if err := json.Unmarshal([]byte(f.MetaValue(models.MetaGraph)), &layers); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(layers[0], tc.want) {
				t.Errorf("layer %+v, want %+v", layers[0], tc.want)
			}
		})
	}
}

// TestImportResizeErrors: what Resize refuses, each error naming the node
// and the attribute or value.
func TestImportResizeErrors(t *testing.T) {
	resize := func(ins []string, attrs ...*onnxpb.AttributeProto) *onnxpb.NodeProto {
		return nd("Resize", "rs", ins, "h", attrs...)
	}
	for _, tc := range []struct {
		name  string
		nodes []*onnxpb.NodeProto
		want  error
		names []string
	}{
		{"bilinear on Resize", []*onnxpb.NodeProto{constFloats("s", 1, 1, 2, 2), resize([]string{"x", "", "s"}, attrStr("mode", "bilinear"))},
			ErrUnsupported, []string{`"rs"`, "bilinear"}},
		{"channel scale", []*onnxpb.NodeProto{constFloats("s", 1, 2, 2, 2), resize([]string{"x", "", "s"})},
			ErrUnsupported, []string{`"rs"`, "batch or the channels"}},
		{"batch scale", []*onnxpb.NodeProto{constFloats("s", 2, 1, 2, 2), resize([]string{"x", "", "s"})},
			ErrUnsupported, []string{`"rs"`, "batch or the channels"}},
		{"channel size", []*onnxpb.NodeProto{constInts("z", 1, 4, 8, 8), resize([]string{"x", "", "", "z"})},
			ErrUnsupported, []string{`"rs"`, "channels"}},
		{"crop and resize", []*onnxpb.NodeProto{constFloats("s", 1, 1, 2, 2),
			resize([]string{"x", "", "s"}, attrStr("coordinate_transformation_mode", "tf_crop_and_resize"))},
			ErrUnsupported, []string{`"rs"`, "tf_crop_and_resize"}},
		{"cubic antialias shrinking", []*onnxpb.NodeProto{constFloats("s", 1, 1, 0.5, 0.5),
			resize([]string{"x", "", "s"}, attrStr("mode", "cubic"), attrInt("antialias", 1))},
			ErrUnsupported, []string{`"rs"`, "antialias"}},
		{"not larger", []*onnxpb.NodeProto{constInts("z", 8, 6),
			resize([]string{"x", "", "", "z"}, attrInts("axes", 2, 3), attrStr("keep_aspect_ratio_policy", "not_larger"))},
			ErrUnsupported, []string{`"rs"`, "keep_aspect_ratio_policy"}},
		{"scales and sizes", []*onnxpb.NodeProto{constFloats("s", 1, 1, 2, 2), constInts("z", 1, 2, 8, 8),
			resize([]string{"x", "", "s", "z"})}, ErrMalformed, []string{`"rs"`, "both"}},
		{"to nothing", []*onnxpb.NodeProto{constFloats("s", 1, 1, 0.1, 1), resize([]string{"x", "", "s"})},
			ErrShape, []string{`"rs"`, "0 elements"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Import(bytes.NewReader(tiny(18, resizeHead, append(tc.nodes, head...)...)))
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
