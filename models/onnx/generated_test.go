package onnx

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/models/onnx/onnxpb"
	"github.com/cotrain/cotrain/solver"
	"google.golang.org/protobuf/proto"
)

// generatedFixture is one entry of testdata/generated.json: a MobileNet
// too large to commit with its weights (scripts/onnx_fixtures.py
// "generated" explains the rule that fills them).
type generatedFixture struct {
	Name    string  `json:"name"`
	Alpha   float64 `json:"alpha"`
	Opset   int     `json:"opset"`
	Input   [3]int  `json:"input"`
	Classes int     `json:"classes"`
	Params  int     `json:"params"`
	Seed    uint64  `json:"seed"`
	Values  int     `json:"generated_values"`
}

// fnv1a64 is FNV-1a, 64 bits, over s's bytes.
func fnv1a64(s string) uint64 {
	h := uint64(0xCBF29CE484222325)
	for i := 0; i < len(s); i++ {
		h = (h ^ uint64(s[i])) * 0x100000001B3
	}
	return h
}

// ruleValues is the Go twin of rule_values in scripts/onnx_fixtures.py.
func ruleValues(name string, dims []int64, seed uint64) []float32 {
	n := int64(1)
	for _, d := range dims {
		n *= d
	}
	base := fnv1a64(name) ^ seed
	var kind int // 0 weight, 1 variance, 2 BN scale, 3 other 1-D
	switch {
	case strings.HasSuffix(name, "running_var"):
		kind = 1
	case len(dims) == 1 && strings.HasSuffix(name, ".weight"):
		kind = 2
	case len(dims) == 1:
		kind = 3
	}
	var scale float64
	if kind == 0 {
		fanIn := int64(1)
		for _, d := range dims[1:] {
			fanIn *= d
		}
		k := 0
		for p := int64(1); p < fanIn; p *= 4 {
			k++
		}
		scale = math.Ldexp(1, 1-k)
	}
	out := make([]float32, n)
	for i := range out {
		z := base + uint64(i+1)*0x9E3779B97F4A7C15
		z = (z ^ z>>30) * 0xBF58476D1CE4E5B9
		z = (z ^ z>>27) * 0x94D049BB133111EB
		z ^= z >> 31
		u := float64(z >> 48)
		switch kind {
		case 0:
			out[i] = float32((u - 32768) / 32768 * scale)
		case 1:
			out[i] = float32((0.5 + u/65536) / 4)
		case 2:
			out[i] = float32(0.5 + u/65536)
		default:
			out[i] = float32((u - 32768) / 131072)
		}
	}
	return out
}

// fillSkeleton gives every float initializer without data the rule's
// values and returns the encoded model and how many values it filled.
func fillSkeleton(t *testing.T, path string, seed uint64) ([]byte, int) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m onnxpb.ModelProto
	if err := proto.Unmarshal(raw, &m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	filled := 0
	for _, init := range m.GetGraph().GetInitializer() {
		if onnxpb.TensorProto_DataType(init.GetDataType()) != onnxpb.TensorProto_FLOAT ||
			len(init.GetRawData()) > 0 || len(init.GetFloatData()) > 0 {
			continue
		}
		v := ruleValues(init.GetName(), init.GetDims(), seed)
		buf := make([]byte, 4*len(v))
		for i, x := range v {
			binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(x))
		}
		init.RawData = buf
		filled += len(v)
	}
	out, err := proto.Marshal(&m)
	if err != nil {
		t.Fatal(err)
	}
	return out, filled
}

// TestImportGeneratedMatchesPyTorch imports MobileNet v1 at α=0.75 and α=1
// (all 27 convolutions, 27 batch norms at full width) whose weights follow
// the fixture script's rule, and compares with PyTorch's output on the
// same input to a relative 1e-4.
func TestImportGeneratedMatchesPyTorch(t *testing.T) {
	fixtures := readJSON[[]generatedFixture](t, "testdata/generated.json")
	alphas := map[float64]bool{}
	for _, fx := range fixtures {
		alphas[fx.Alpha] = true
	}
	if !alphas[1] || !alphas[0.75] {
		t.Fatalf("generated fixtures cover α %v, want 0.75 and 1", alphas)
	}
	for _, fx := range fixtures {
		t.Run(fx.Name, func(t *testing.T) {
			base := filepath.Join("testdata", fx.Name)
			model, filled := fillSkeleton(t, base+".skel.onnx", fx.Seed)
			if filled != fx.Values {
				t.Fatalf("filled %d values, the script generated %d", filled, fx.Values)
			}
			f, err := Import(bytes.NewReader(model))
			if err != nil {
				t.Fatal(err)
			}
			net, err := f.Build(cpu.NewCPU())
			if err != nil {
				t.Fatal(err)
			}
			if net.In != (solver.Shape{C: fx.Input[0], H: fx.Input[1], W: fx.Input[2]}) || net.Out.Size() != fx.Classes {
				t.Errorf("net %v -> %v, want %v -> %d", net.In, net.Out, fx.Input, fx.Classes)
			}
			if net.NumParams() != fx.Params {
				t.Errorf("%d parameters, PyTorch has %d", net.NumParams(), fx.Params)
			}
			x, _ := readNPY(t, base+".x.npy")
			want, _ := readNPY(t, base+".y.npy")
			got := forward(net, x)
			e := relErr(got, want)
			if !(e <= 1e-4) {
				t.Fatalf("relative error %.3g > 1e-4 (got %v, want %v)", e, got[:4], want[:4])
			}
			// The two samples' logits must differ: a network whose output
			// does not depend on its input would pass with wrong layers.
			k := fx.Classes
			if d := relErr(got[:k], got[k:]); d < 0.05 {
				t.Fatalf("the two samples' logits differ by only %.3g of their scale", d)
			}
			t.Logf("α=%g opset %d: %d params, relative error %.2g", fx.Alpha, fx.Opset, net.NumParams(), e)
		})
	}
}

// TestRuleValuesExact pins a few values of the rule, so that a change on
// one side only fails here and not as a vague mismatch of logits.
func TestRuleValuesExact(t *testing.T) {
	for _, tc := range []struct {
		name string
		dims []int64
		min  float32
		max  float32
	}{
		{"features.0.weight", []int64{32, 3, 3, 3}, -1.0 / 4, 1.0 / 4}, // fan-in 27: k=3, scale 2^-2
		{"features.1.running_var", []int64{32}, 1.0 / 8, 1.5 / 4},
		{"features.1.weight", []int64{32}, 0.5, 1.5},
		{"features.1.bias", []int64{32}, -0.25, 0.25},
	} {
		v := ruleValues(tc.name, tc.dims, 1)
		lo, hi := v[0], v[0]
		for _, x := range v {
			lo, hi = min(lo, x), max(hi, x)
		}
		if lo < tc.min || hi >= tc.max || hi-lo < (tc.max-tc.min)/4 {
			t.Errorf("%s: values in [%g, %g], want spread over [%g, %g)", tc.name, lo, hi, tc.min, tc.max)
		}
	}
}
