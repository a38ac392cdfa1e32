package onnx

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/solver"
)

// randomFile builds a registered model with seeded weights and randomised
// batch-norm statistics, as a weight file.
func randomFile(t testing.TB, model string, c models.Config) *models.File {
	t.Helper()
	net, err := models.Build(cpu.NewCPU(), model, c)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(7, 8))
	net.InitParams(r)
	state := make([]float32, net.State.Len())
	for i := range state {
		state[i] = 0.5 + float32(r.Float64()) // valid as means and as variances
	}
	net.B.Upload(net.State, state)
	spec, _ := models.Lookup(model)
	return models.Snapshot(model, spec.Resolve(c), net, nil)
}

func randomInput(in solver.Shape, n int) []float32 {
	r := rand.New(rand.NewPCG(3, 4))
	x := make([]float32, n*in.Size())
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	return x
}

// TestExportRoundTrip exports registered models and imported fixtures,
// imports the result and checks that the outputs are bit-identical: the
// export writes every parameter and configuration the import reads.
func TestExportRoundTrip(t *testing.T) {
	type tc struct {
		name string
		file *models.File
	}
	cases := []tc{
		{"lenet5", randomFile(t, "lenet5", models.Config{})},
		{"lenet-caffe", randomFile(t, "lenet-caffe", models.Config{})},
		{"alexnet-small", randomFile(t, "alexnet-small", models.Config{})},
		{"mobilenet-small a0.25", randomFile(t, "mobilenet-small", models.Config{Width: 0.25})},
		{"mobilenet-v1 a0.25 64px", randomFile(t, "mobilenet-v1", models.Config{Width: 0.25, Classes: 7, Input: solver.Shape{C: 3, H: 64, W: 64}})},
	}
	for _, fx := range loadManifest(t) {
		cases = append(cases, tc{fx.Name, importFile(t, filepath.Join("testdata", fx.Name+".onnx"))})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want, err := c.file.Build(cpu.NewCPU())
			if err != nil {
				t.Fatal(err)
			}
			back := reimport(t, c.file)
			got, err := back.Build(cpu.NewCPU())
			if err != nil {
				t.Fatal(err)
			}
			if got.NumParams() != want.NumParams() || got.State.Len() != want.State.Len() {
				t.Errorf("%d params, %d state; want %d, %d", got.NumParams(), got.State.Len(), want.NumParams(), want.State.Len())
			}
			x := randomInput(want.In, 3)
			a, b := forward(got, x), forward(want, x)
			if e := relErr(a, b); e != 0 {
				t.Errorf("outputs differ after export and import: relative %.3g", e)
			}
			// Tensor names survive, so a weight file's names match the ONNX file's.
			for i, tn := range want.Tensors() {
				if got.Tensors()[i].Name != tn.Name {
					t.Errorf("tensor %d named %s, was %s", i, got.Tensors()[i].Name, tn.Name)
					break
				}
			}
		})
	}
}

// TestExportForPython writes exported files for scripts/onnx_fixtures.py
// check when COTRAIN_ONNX_EXPORT names a folder; otherwise it is skipped.
// It is how the exports were checked with onnx.checker (see the README of
// scripts): a Go test never needs Python itself.
func TestExportForPython(t *testing.T) {
	dir := os.Getenv("COTRAIN_ONNX_EXPORT")
	if dir == "" {
		t.Skip("COTRAIN_ONNX_EXPORT not set")
	}
	for _, fx := range loadManifest(t) {
		f := importFile(t, filepath.Join("testdata", fx.Name+".onnx"))
		var buf bytes.Buffer
		if err := Export(&buf, f); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, fx.Name+".cotrain.onnx"), buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, fx := range loadActs(t) { // testdata/acts: written as acts_NAME
		f := importFile(t, filepath.Join("testdata", "acts", fx.Name+".onnx"))
		var buf bytes.Buffer
		if err := Export(&buf, f); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "acts_"+fx.Name+".cotrain.onnx"), buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
