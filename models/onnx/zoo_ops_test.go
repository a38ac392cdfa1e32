package onnx

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/cotrain/cotrain/gpu/cpu"
)

// TestZooOps imports zoo_ops.onnx (scripts/onnx_opsets.py: asymmetric pads
// on Conv, MaxPool over negative values, AveragePool counting its padding,
// and a Sum of three inputs, as the model zoo's Caffe exports write them)
// and checks the output and every parameter gradient against PyTorch's to
// a relative 1e-4.
func TestZooOps(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(opsetsDir, "zoo_ops.json"))
	if err != nil {
		t.Fatal(err)
	}
	var g structGolden
	if err := json.Unmarshal(raw, &g); err != nil {
		t.Fatal(err)
	}
	f, err := ImportFile(filepath.Join(opsetsDir, "zoo_ops.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	net, err := f.Build(cpu.NewCPU())
	if err != nil {
		t.Fatal(err)
	}
	y, grads := trainStep(net, g.X, g.DY)
	if e := relErr(y, g.Y); !(e <= 1e-4) {
		t.Errorf("output: relative error %.3g > 1e-4", e)
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
		if e := relErr(got, want); !(e <= 1e-4) {
			t.Errorf("gradient %s: relative error %.3g > 1e-4", name, e)
		} else {
			t.Logf("gradient %s: relative error %.2g", name, e)
		}
	}
}
