//go:build opencl

package onnx

import (
	"path/filepath"
	"testing"
)

// TestStructuralOnOpenCL runs every structural fixture forward and backward
// on the OpenCL backend and compares the output and the parameter gradients
// with PyTorch's, to the same relative 1e-4 as on the CPU: the structural
// layers' kernels (CopyStrided, Broadcast, ReduceSum) on a device, inside
// whole networks.
func TestStructuralOnOpenCL(t *testing.T) {
	o := openCL(t)
	for _, fx := range loadStruct(t) {
		t.Run(fx.Name, func(t *testing.T) {
			f := importFile(t, filepath.Join("testdata", "struct", fx.Name+".onnx"))
			g := readGolden(t, fx.Name)
			net, err := f.Build(o)
			if err != nil {
				t.Fatal(err)
			}
			y, grads := trainStep(net, g.X, g.DY)
			worst := relErr(y, g.Y)
			for name, want := range g.Grads {
				worst = max(worst, relErr(grads[name], want))
			}
			if !(worst <= 1e-4) {
				t.Errorf("worst relative error %.3g > 1e-4 over the output and gradients", worst)
			}
			t.Logf("%s: worst relative error %.2g", o.Name(), worst)
		})
	}
}
