//go:build opencl

package main

import "testing"

// The PyTorch 1-D CNN fine-tuned with --train-last all through the CLI on
// the OpenCL backend (PoCL here): the held-out loss falls as on the CPU.
func TestFinetune1DONNXOnOpenCL(t *testing.T) {
	finetune1DONNX(t, "opencl")
}
