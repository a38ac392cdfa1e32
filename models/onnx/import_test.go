package onnx

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cotrain/cotrain/data"
	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/solver"
)

// fixture is one entry of testdata/manifest.json (scripts/onnx_fixtures.py).
type fixture struct {
	Name     string   `json:"name"`
	Opset    int      `json:"opset"`
	Mode     string   `json:"mode"`
	Input    [3]int   `json:"input"`
	Classes  int      `json:"classes"`
	Params   int      `json:"params"`
	Ops      []string `json:"ops"`
	Softmax  bool     `json:"softmax"`
	FoldedBN bool     `json:"folded_bn"`
}

// readJSON reads the JSON file at path (a fixture or golden the scripts
// wrote) into a T, failing the test if it cannot.
func readJSON[T any](t testing.TB, path string) T {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return v
}

func loadManifest(t testing.TB) []fixture {
	t.Helper()
	fx := readJSON[[]fixture](t, "testdata/manifest.json")
	return fx
}

func readNPY(t testing.TB, path string) ([]float32, []int) {
	t.Helper()
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	x, shape, err := data.ReadNPY(fh)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return x, shape
}

func importFile(t testing.TB, path string) *models.File {
	t.Helper()
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	f, err := Import(fh)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return f
}

// reimport exports f to ONNX and imports the result: the round trip every
// export test makes.
func reimport(t testing.TB, f *models.File) *models.File {
	t.Helper()
	var buf bytes.Buffer
	if err := Export(&buf, f); err != nil {
		t.Fatalf("export: %v", err)
	}
	back, err := Import(&buf)
	if err != nil {
		t.Fatalf("import of the export: %v", err)
	}
	return back
}

// relErr is max|got-want| / max|want|: the error relative to the output's
// scale, which an elementwise ratio would overstate for logits near zero.
func relErr(got, want []float32) float64 {
	var diff, scale float64
	for i := range want {
		diff = max(diff, math.Abs(float64(got[i])-float64(want[i])))
		scale = max(scale, math.Abs(float64(want[i])))
	}
	return diff / scale
}

// forward runs net in evaluation mode on x.
func forward(net *solver.Net, x []float32) []float32 {
	n := len(x) / net.In.Size()
	xb := net.B.Alloc(len(x))
	net.B.Upload(xb, x)
	out := make([]float32, n*net.Out.Size())
	net.B.Download(out, net.Forward(xb, n, false))
	return out
}

// TestImportMatchesPyTorch imports every fixture, runs it and compares with
// PyTorch's output on the same input to a relative 1e-4.
func TestImportMatchesPyTorch(t *testing.T) {
	fixtures := loadManifest(t)
	if len(fixtures) < 6 {
		t.Fatalf("only %d fixtures", len(fixtures))
	}
	for _, fx := range fixtures {
		t.Run(fx.Name, func(t *testing.T) {
			base := filepath.Join("testdata", fx.Name)
			f := importFile(t, base+".onnx")
			x, _ := readNPY(t, base+".x.npy")
			want, _ := readNPY(t, base+".y.npy")
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
			got := forward(net, x)
			if e := relErr(got, want); !(e <= 1e-4) {
				t.Errorf("relative error %.3g > 1e-4 (got %v, want %v)", e, got[:min(4, len(got))], want[:min(4, len(want))])
			} else {
				t.Logf("opset %d %s: %d layers, %d params, relative error %.2g", fx.Opset, fx.Mode, len(net.Layers()), net.NumParams(), e)
			}
			notes := strings.Join(metaAll(f, MetaNote), "\n")
			if got := strings.Contains(notes, "Softmax was dropped"); got != fx.Softmax {
				t.Errorf("softmax note %v, want %v (notes %q)", got, fx.Softmax, notes)
			}
			if got := strings.Contains(notes, "folded batch normalization"); got != fx.FoldedBN {
				t.Errorf("folded-BN note %v, want %v (notes %q)", got, fx.FoldedBN, notes)
			}
			// The file survives the weight file format unchanged.
			var buf bytes.Buffer
			if err := models.Write(&buf, f); err != nil {
				t.Fatal(err)
			}
			back, err := models.Read(&buf)
			if err != nil {
				t.Fatal(err)
			}
			net2, err := back.Build(cpu.NewCPU())
			if err != nil {
				t.Fatal(err)
			}
			if e := relErr(forward(net2, x), got); e != 0 {
				t.Errorf("after a weight-file round trip: relative change %.3g", e)
			}
		})
	}
}

func metaAll(f *models.File, key string) []string {
	var out []string
	for _, kv := range f.Meta {
		if kv[0] == key {
			out = append(out, kv[1])
		}
	}
	return out
}
