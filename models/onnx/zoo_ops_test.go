package onnx

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/solver"
)

// TestZooOps imports the model zoo's Caffe-style operators as
// scripts/onnx_opsets.py writes them: zoo_ops.onnx (asymmetric pads on
// Conv, MaxPool over negative values, AveragePool counting its padding, a
// Sum of three inputs) and zoo_lrn.onnx (LRN with AlexNet's parameters and
// with larger ones), checks the output and every parameter gradient
// against PyTorch's to a relative 1e-4, and fine-tunes: SGD steps on the
// batch lower its loss.
func TestZooOps(t *testing.T) {
	for _, name := range []string{"zoo_ops", "zoo_lrn"} {
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join(opsetsDir, name+".json"))
			if err != nil {
				t.Fatal(err)
			}
			var g structGolden
			if err := json.Unmarshal(raw, &g); err != nil {
				t.Fatal(err)
			}
			f, err := ImportFile(filepath.Join(opsetsDir, name+".onnx"))
			if err != nil {
				t.Fatal(err)
			}
			net, err := f.Build(cpu.NewCPU())
			if err != nil {
				t.Fatal(err)
			}
			// cotrain export writes the same network back (LRN, the pad
			// layers, the add): the import of its export computes the same.
			back, err := reimport(t, f).Build(cpu.NewCPU())
			if err != nil {
				t.Fatal(err)
			}
			if e := relErr(forward(back, g.X), forward(net, g.X)); e != 0 {
				t.Errorf("export round trip: relative change %.3g", e)
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
			opt, err := solver.NewOptimizer(net.B, "sgd", net.Params.Len(), 0.9, 0, false)
			if err != nil {
				t.Fatal(err)
			}
			tr := solver.NewTrainer(net, opt, solver.Constant(0.01))
			labels := []int32{0, 3}
			var first, last float64
			for i := range 10 {
				loss, err := tr.Step(g.X, labels)
				if err != nil {
					t.Fatal(err)
				}
				if i == 0 {
					first = loss
				}
				last = loss
			}
			if !(last < first) {
				t.Errorf("loss %.4f after 10 steps, %.4f at the first", last, first)
			}
			t.Logf("fine-tuning: loss %.4f -> %.4f in 10 SGD steps", first, last)
		})
	}
}
