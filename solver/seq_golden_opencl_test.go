//go:build opencl

package solver_test

import "testing"

// TestGoldenSeqOpenCL checks Embedding, LSTM and GRU against PyTorch on the
// OpenCL backend (the fixtures and tolerance of TestGoldenSeq).
func TestGoldenSeqOpenCL(t *testing.T) {
	o := openCLDefault(t)
	for _, name := range seqGoldenCases {
		t.Run(name, func(t *testing.T) { runSeqGolden(t, o, name) })
	}
}
