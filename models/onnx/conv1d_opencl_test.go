//go:build opencl

package onnx

import (
	"path/filepath"
	"testing"
)

// TestImport1DOnOpenCL runs every 1-D fixture on the OpenCL backend, in
// evaluation and in a training step, against PyTorch's values to the same
// relative 1e-4 as on the CPU: the 1×k convolutions and pools on a device.
func TestImport1DOnOpenCL(t *testing.T) {
	o := openCL(t)
	for _, fx := range loadConv1D(t) {
		t.Run(fx.Name, func(t *testing.T) {
			f := importFile(t, filepath.Join("testdata", "conv1d", fx.Name+".onnx"))
			worst := check1D(t, f, fx, readConv1DGolden(t, fx.Name), o)
			t.Logf("%s: worst relative error %.2g", o.Name(), worst)
		})
	}
}

// TestFinetune1DOnOpenCL: --train-last all fine-tuning of the imported 1-D
// CNN lowers the loss on OpenCL too.
func TestFinetune1DOnOpenCL(t *testing.T) {
	finetune1D(t, openCL(t))
}
