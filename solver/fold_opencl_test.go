//go:build opencl

package solver_test

import "testing"

// TestFoldedMatchesUnfoldedOnOpenCL: checkFoldBlock on the OpenCL device,
// where the folded convolution's ReLU or ReLU6 runs in the fused
// epilogue: the same bound as on the CPU (foldBound's argument holds for
// any order of the sum).
func TestFoldedMatchesUnfoldedOnOpenCL(t *testing.T) {
	o := openCLDefault(t)
	for k, blk := range foldBlocks {
		t.Run(blk.name, func(t *testing.T) { checkFoldBlock(t, o, k, func(bool, bool) {}) })
	}
}
