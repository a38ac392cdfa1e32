//go:build opencl

package solver_test

import (
	"errors"
	"testing"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/opencl"
)

// TestFoldedMatchesUnfoldedOnOpenCL: checkFoldBlock on the OpenCL device,
// where the folded convolution's ReLU or ReLU6 runs in the fused
// epilogue: the same bound as on the CPU (foldBound's argument holds for
// any order of the sum).
func TestFoldedMatchesUnfoldedOnOpenCL(t *testing.T) {
	cfg := opencl.DefaultConfig()
	cfg.Tune = false
	o, err := opencl.New(cfg)
	if errors.Is(err, gpu.ErrNoOpenCL) || errors.Is(err, gpu.ErrNoDevice) {
		t.Skipf("no OpenCL device: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	for k, blk := range foldBlocks {
		t.Run(blk.name, func(t *testing.T) { checkFoldBlock(t, o, k, func(bool, bool) {}) })
	}
}
