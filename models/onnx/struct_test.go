package onnx

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/solver"
)

// The structural operators against PyTorch: fixtures written by
// scripts/onnx_struct_fixtures.py into testdata/struct (a channel shuffle
// unit, a squeeze-excitation block, miscellaneous slicing, padding and
// reductions, and a tf2onnx-style NHWC graph). Each is imported, run
// forward, and run backward with the fixture's output gradient; the output
// and every parameter gradient (whose path runs back through every
// structural layer) must match PyTorch's float64 values to a relative 1e-4.

type structFixture struct {
	Name    string   `json:"name"`
	Input   [3]int   `json:"input"`
	Classes int      `json:"classes"`
	Ops     []string `json:"ops"`
}

type structGolden struct {
	X, Y, DY []float32
	Grads    map[string][]float32
}

func loadStruct(t testing.TB) []structFixture {
	t.Helper()
	fx := readJSON[[]structFixture](t, "testdata/struct/manifest.json")
	return fx
}

func readGolden(t testing.TB, name string) structGolden {
	t.Helper()
	g := readJSON[structGolden](t, filepath.Join("testdata", "struct", name+".json"))
	return g
}

// trainStep runs net forward in training mode on x and backward with dy,
// and returns the output and the parameter gradients by tensor name.
func trainStep(net *solver.Net, x, dy []float32) ([]float32, map[string][]float32) {
	n := len(x) / net.In.Size()
	xb := net.B.Alloc(len(x))
	net.B.Upload(xb, x)
	out := make([]float32, n*net.Out.Size())
	net.B.Download(out, net.Forward(xb, n, true))
	db := net.B.Alloc(len(dy))
	net.B.Upload(db, dy)
	net.Backward(db)
	flat := make([]float32, net.Grads.Len())
	net.B.Download(flat, net.Grads)
	grads := map[string][]float32{}
	for _, t := range net.Tensors() {
		grads[t.Name] = flat[t.Off : t.Off+t.Spec.Size()]
	}
	return out, grads
}

func TestImportStructuralMatchesPyTorch(t *testing.T) {
	for _, fx := range loadStruct(t) {
		t.Run(fx.Name, func(t *testing.T) {
			f := importFile(t, filepath.Join("testdata", "struct", fx.Name+".onnx"))
			g := readGolden(t, fx.Name)
			net, err := f.Build(cpu.NewCPU())
			if err != nil {
				t.Fatal(err)
			}
			if net.In != (solver.Shape{C: fx.Input[0], H: fx.Input[1], W: fx.Input[2]}) || net.Out.Size() != fx.Classes {
				t.Fatalf("net %v -> %v, want %v -> %d", net.In, net.Out, fx.Input, fx.Classes)
			}
			y, grads := trainStep(net, g.X, g.DY)
			worst := relErr(y, g.Y)
			if !(worst <= 1e-4) {
				t.Errorf("output: relative error %.3g > 1e-4", worst)
			}
			if len(grads) != len(g.Grads) {
				t.Errorf("%d parameter tensors, PyTorch has %d", len(grads), len(g.Grads))
			}
			for name, want := range g.Grads {
				got, ok := grads[name]
				if !ok || len(got) != len(want) {
					t.Errorf("gradient %s: %d values, PyTorch has %d", name, len(got), len(want))
					continue
				}
				e := relErr(got, want)
				if !(e <= 1e-4) {
					t.Errorf("gradient %s: relative error %.3g > 1e-4", name, e)
				}
				worst = max(worst, e)
			}
			t.Logf("%d layers, worst relative error %.2g over the output and %d gradients", len(net.Layers()), worst, len(grads))
		})
	}
}

// TestExportStructuralRoundTrip: PyTorch's file → import → export → import
// gives the same network: the logits are identical, and the second import's
// layers equal the first's.
func TestExportStructuralRoundTrip(t *testing.T) {
	for _, fx := range loadStruct(t) {
		t.Run(fx.Name, func(t *testing.T) {
			f := importFile(t, filepath.Join("testdata", "struct", fx.Name+".onnx"))
			g := readGolden(t, fx.Name)
			back := reimport(t, f)
			var outs [2][]float32
			for i, file := range []*models.File{f, back} {
				net, err := file.Build(cpu.NewCPU())
				if err != nil {
					t.Fatal(err)
				}
				outs[i] = forward(net, g.X)
			}
			for i := range outs[0] {
				if math.Float32bits(outs[0][i]) != math.Float32bits(outs[1][i]) {
					t.Fatalf("logit %d: %v after the round trip, %v before", i, outs[1][i], outs[0][i])
				}
			}
		})
	}
}

// TestExportStructuralForPython writes cotrain's exports of the structural
// fixtures for `scripts/onnx_struct_fixtures.py check` when
// COTRAIN_ONNX_EXPORT names a folder; otherwise it is skipped (a Go test
// never needs Python).
func TestExportStructuralForPython(t *testing.T) {
	dir := os.Getenv("COTRAIN_ONNX_EXPORT")
	if dir == "" {
		t.Skip("COTRAIN_ONNX_EXPORT not set")
	}
	for _, fx := range loadStruct(t) {
		f := importFile(t, filepath.Join("testdata", "struct", fx.Name+".onnx"))
		var buf bytes.Buffer
		if err := Export(&buf, f); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "struct_"+fx.Name+".cotrain.onnx"), buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
