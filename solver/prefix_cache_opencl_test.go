//go:build opencl

package solver_test

import "testing"

// TestPrefixCacheSameBitsOnOpenCL: checkPrefixCache on the OpenCL device.
func TestPrefixCacheSameBitsOnOpenCL(t *testing.T) {
	o := openCLDefault(t)
	checkPrefixCache(t, o)
}
