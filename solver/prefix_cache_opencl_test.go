//go:build opencl

package solver_test

import (
	"errors"
	"testing"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/opencl"
)

// TestPrefixCacheSameBitsOnOpenCL: checkPrefixCache on the OpenCL device.
func TestPrefixCacheSameBitsOnOpenCL(t *testing.T) {
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
	checkPrefixCache(t, o)
}
