//go:build opencl

package onnx

import "testing"

// TestZooOpsOnOpenCL is TestZooOps on the OpenCL backend: the zoo's
// Caffe-style operators and the scaled-down AlexNet and ResNet, forward and
// backward against PyTorch to a relative 1e-4, then fine-tuned with every
// layer trained.
func TestZooOpsOnOpenCL(t *testing.T) {
	o := openCL(t)
	for _, name := range zooOpsFixtures {
		t.Run(name, func(t *testing.T) { checkZooOps(t, o, name) })
	}
}
