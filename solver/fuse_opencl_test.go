//go:build opencl

package solver_test

import (
	"errors"
	"testing"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/opencl"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/solver"
)

// On OpenCL, a network with its activations fused into the device's
// kernels trains to the bits of the same network unfused, with every layer
// learning, the last two only and a fused producer frozen; so does one on
// a backend whose fusing is off (OpenCLConfig.NoFuse, COTRAIN_OPENCL_FUSE=0).
func TestFusedMatchesUnfusedOnOpenCL(t *testing.T) {
	for _, noFuse := range []bool{false, true} {
		cfg := opencl.DefaultConfig()
		cfg.Tune, cfg.NoFuse = false, noFuse
		o, err := opencl.New(cfg)
		if errors.Is(err, gpu.ErrNoOpenCL) || errors.Is(err, gpu.ErrNoDevice) {
			t.Skipf("no OpenCL device: %v", err)
		}
		if err != nil {
			t.Fatal(err)
		}
		fuseNet := func(b gpu.Backend) (*solver.Net, error) {
			return solver.NewNet(b, solver.Shape{C: 3, H: 17, W: 17}, fuseNodes())
		}
		for _, freeze := range []string{"", "last2", "c2"} {
			fuseRuns(t, "fuse", o, fuseNet, freeze)
		}
		if !noFuse {
			fuseRuns(t, "alexnet-small", o, func(b gpu.Backend) (*solver.Net, error) {
				return models.Build(b, "alexnet-small", models.Config{})
			}, "")
		}
		o.Close()
	}
}
