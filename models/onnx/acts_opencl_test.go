//go:build opencl

package onnx

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/gpu/opencl"
)

// TestActivationsOnOpenCL runs every activation fixture (testdata/acts)
// and the mobile-blocks model forward against PyTorch's logits, through one
// training step against PyTorch's autograd where the fixture has a gradient
// golden (checkGrads), and against the CPU backend's output and parameter
// gradients, to a relative 1e-4: the
// activation and softmax kernels (activation.cl) on a device, inside whole
// imported networks.
func TestActivationsOnOpenCL(t *testing.T) {
	o := openCL(t)
	bases := []string{filepath.Join("testdata", "mobile_blocks")}
	for _, fx := range loadActs(t) {
		bases = append(bases, filepath.Join("testdata", "acts", fx.Name))
	}
	for _, base := range bases {
		t.Run(filepath.Base(base), func(t *testing.T) {
			f := importFile(t, base+".onnx")
			x, _ := readNPY(t, base+".x.npy")
			want, _ := readNPY(t, base+".y.npy")
			dev, err := f.Build(o)
			if err != nil {
				t.Fatal(err)
			}
			if e := relErr(forward(dev, x), want); !(e <= 1e-4) {
				t.Errorf("logits: relative error %.3g > 1e-4 against PyTorch", e)
			}
			if _, err := os.Stat(base + ".json"); err == nil {
				// A training step against PyTorch's autograd, where the
				// fixture has one (the operators of #27).
				checkGrads(t, dev, readJSON[structGolden](t, base+".json"))
			}
			cpu, err := f.Build(cpu.NewCPU())
			if err != nil {
				t.Fatal(err)
			}
			dy := make([]float32, len(want))
			for i := range dy {
				dy[i] = float32(i%5)*0.1 - 0.2
			}
			yc, gc := trainStep(cpu, x, dy)
			yd, gd := trainStep(dev, x, dy)
			worst := relErr(yd, yc)
			// A gradient that is zero in exact arithmetic (the bias before a
			// softmax over a spatial axis: every softmax row's input gradient
			// sums to 0) is rounding noise on both backends; errors are
			// measured against 1e-3 of the largest gradient at least.
			scale := 0.0
			for _, g := range gc {
				for _, v := range g {
					scale = max(scale, math.Abs(float64(v)))
				}
			}
			for name, g := range gc {
				e := errFloor(gd[name], g, 1e-3*scale)
				if !(e <= 1e-4) {
					t.Errorf("gradient of %s: relative error %.3g against the CPU", name, e)
				}
				worst = max(worst, e)
			}
			if !(worst <= 1e-4) {
				t.Errorf("worst relative error %.3g > 1e-4 against the CPU over the output and gradients", worst)
			}
			t.Logf("%s: worst relative error against the CPU %.2g", o.Name(), worst)
		})
	}
}

// errFloor is max|got-want| / max(max|want|, floor).
func errFloor(got, want []float32, floor float64) float64 {
	var diff, scale float64
	for i := range want {
		diff = max(diff, math.Abs(float64(got[i])-float64(want[i])))
		scale = max(scale, math.Abs(float64(want[i])))
	}
	return diff / max(scale, floor)
}

// openCL opens the OpenCL backend untuned (the imported networks' tests
// compare numbers, not speed), closed when t ends, or skips t when there is
// no device.
// TestTorch2ExportsOnOpenCL is TestTorch2Exports on the OpenCL backend:
// every PyTorch 2.11 export predicts PyTorch's output to 1e-4 and a
// training step lowers its loss.
func TestTorch2ExportsOnOpenCL(t *testing.T) { checkTorch2(t, openCL(t)) }

func openCL(t testing.TB) *opencl.OpenCL {
	t.Helper()
	cfg := opencl.DefaultConfig()
	cfg.Tune = false
	o, err := opencl.New(cfg)
	if errors.Is(err, gpu.ErrNoOpenCL) || errors.Is(err, gpu.ErrNoDevice) {
		t.Skipf("no OpenCL device: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.Close() })
	return o
}
