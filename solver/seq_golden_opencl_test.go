//go:build opencl

package solver_test

import (
	"errors"
	"testing"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/opencl"
)

// TestGoldenSeqOpenCL checks Embedding, LSTM and GRU against PyTorch on the
// OpenCL backend (the fixtures and tolerance of TestGoldenSeq).
func TestGoldenSeqOpenCL(t *testing.T) {
	cfg := opencl.DefaultConfig()
	cfg.Tune = false
	o, err := opencl.New(cfg)
	if errors.Is(err, gpu.ErrNoOpenCL) || errors.Is(err, gpu.ErrNoDevice) {
		t.Skipf("no OpenCL device: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range seqGoldenCases {
		t.Run(name, func(t *testing.T) { runSeqGolden(t, o, name) })
	}
}
