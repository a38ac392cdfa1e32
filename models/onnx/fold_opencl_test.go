//go:build opencl

package onnx

import "testing"

// TestFoldedFineTuneImportedOnOpenCL: checkFoldedImport on the OpenCL
// device (PoCL here), where the folded convolution's activation runs in
// the fused epilogue; the tolerance is the CPU's.
func TestFoldedFineTuneImportedOnOpenCL(t *testing.T) {
	o := openCL(t)
	for _, name := range foldFixtures {
		t.Run(name, func(t *testing.T) { checkFoldedImport(t, o, name, 1e-5) })
	}
}
