//go:build opencl

package solver_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/opencl"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/solver"
)

// noKeeper hides a backend's gpu.ConvColumnKeeper: its convolutions expand
// x again for the filter gradient, as before column matrices were kept.
type noKeeper struct{ gpu.Backend }

// groupedNodes are convolutions with strides, padding and groups whose
// output planes are large enough for im2col_win.
func groupedNodes() []solver.Node {
	return []solver.Node{
		{Layer: solver.NewConv2D("g1", solver.ConvConfig{Out: 8, KH: 3, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1})},
		{Layer: solver.NewReLU("r1")},
		{Layer: solver.NewConv2D("g2", solver.ConvConfig{Out: 8, KH: 3, KW: 5, PadH: 1, PadW: 2, Groups: 2})},
		{Layer: solver.NewFlatten("flat")},
		{Layer: solver.NewLinear("fc", 10)},
	}
}

// openCLForSolverTest opens a backend, Winograd in the given mode
// (opencl.Config.Winograd).
func openCLForSolverTest(t *testing.T, winograd string) *opencl.OpenCL {
	return openCLForSolverModes(t, winograd, opencl.FFTAuto)
}

// openCLForSolverModes opens a backend, Winograd and FFT in the given
// modes (opencl.Config.Winograd, FFT).
func openCLForSolverModes(t *testing.T, winograd, fft string) *opencl.OpenCL {
	cfg := opencl.DefaultConfig()
	cfg.Winograd, cfg.FFT = winograd, fft
	return openCLUntuned(t, cfg)
}

// openCLDefault opens a backend in the default configuration, untuned,
// closed when the test ends; the test is skipped where there is no device.
func openCLDefault(t *testing.T) *opencl.OpenCL {
	o := openCLUntuned(t, opencl.DefaultConfig())
	t.Cleanup(func() { o.Close() })
	return o
}

// openCLUntuned opens a backend in configuration cfg without tuning its
// GEMM, skipping the test where there is no OpenCL device.
func openCLUntuned(t *testing.T, cfg opencl.Config) *opencl.OpenCL {
	cfg.Tune = false
	o, err := opencl.New(cfg)
	if errors.Is(err, gpu.ErrNoOpenCL) || errors.Is(err, gpu.ErrNoDevice) {
		t.Skipf("no OpenCL device: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// Keeping each convolution's column matrix from the training forward for
// the filter gradient changes no bit of the gradients, weights, state or
// logits (steps at batch 6 with evaluations at batch 8 in between, which
// must not leave stale columns, then a gradient at batch 4, smaller than
// the kept buffers), partly frozen or not; and a training step then expands
// each convolution's input once, not twice. With Winograd forced on, the
// 3×3 stride-1 convolutions keep no columns (their forward expands
// nothing), so their filter gradients expand x once either way, and
// the bits are again the same with and without a keeper. With FFT forced
// on, the same convolutions keep no columns either and expand nothing at
// all (all three passes by FFT).
func TestConvKeptColumnsOnOpenCL(t *testing.T) {
	for _, mode := range []struct{ name, winograd, fft string }{
		{"winograd=0", opencl.WinogradOff, opencl.FFTOff}, {"winograd=1", opencl.WinogradOn, opencl.FFTOff}, {"fft=1", opencl.WinogradOff, opencl.FFTOn},
	} {
		t.Run(mode.name, func(t *testing.T) { testConvKeptColumnsOnOpenCL(t, mode.winograd, mode.fft) })
	}
}

func testConvKeptColumnsOnOpenCL(t *testing.T, winograd, fft string) {
	o := openCLForSolverModes(t, winograd, fft)
	defer o.Close()
	build := map[string]func(gpu.Backend) (*solver.Net, error){
		"mobilenet-small": func(b gpu.Backend) (*solver.Net, error) {
			return models.Build(b, "mobilenet-small", models.Config{Width: 0.25})
		},
		"residual": func(b gpu.Backend) (*solver.Net, error) {
			return solver.NewNet(b, solver.Shape{C: 3, H: 8, W: 8}, residualNodes())
		},
		"grouped": func(b gpu.Backend) (*solver.Net, error) {
			return solver.NewNet(b, solver.Shape{C: 4, H: 13, W: 11}, groupedNodes())
		},
	}
	for _, model := range []string{"mobilenet-small", "residual", "grouped"} {
		for _, last := range []int{-1, 2} { // -1: all layers learn
			var runs [2][][]float32
			for k, b := range []gpu.Backend{o, noKeeper{o}} {
				runs[k] = frozenFingerprint(t, build[model], b, last)
			}
			sameFingerprint(t, fmt.Sprintf("%s (last %d)", model, last), runs[0], runs[1], "with kept columns", "without")
		}
	}
	// im2col launches of a steady training step: one per convolution
	// (residual: four 3×3 convolutions) with kept columns, two without.
	for k, b := range []gpu.Backend{o, noKeeper{o}} {
		n, err := build["residual"](b)
		if err != nil {
			t.Fatal(err)
		}
		im2col := steadyStepLaunches(t, o, b, n, "im2col")
		want := 4 * (k + 1)
		switch {
		case fft == opencl.FFTOn:
			want = 0
		case winograd == opencl.WinogradOn:
			want = 4
		}
		if im2col != want {
			t.Errorf("kept columns %v: %d im2col launches in a training step, want %d", k == 0, im2col, want)
		}
	}
}

// steadyStepLaunches is how many kernels whose names start with prefix the
// third training step (batch 4, SGD with momentum) of n, built on b, launches
// on o, the OpenCL backend under b: a steady step, after the first has
// asked for what is kept and the second has used it.
func steadyStepLaunches(t *testing.T, o *opencl.OpenCL, b gpu.Backend, n *solver.Net, prefix string) int {
	t.Helper()
	r := rand.New(rand.NewPCG(5, 6))
	n.InitParams(r)
	tr := solver.NewTrainer(n, solver.NewSGD(b, n.NumParams(), 0.9, 0, false), solver.Constant(0.01))
	x := make([]float32, 4*n.In.Size())
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	labels := []int32{1, 2, 3, 4}
	for s := 0; s < 3; s++ {
		if s == 2 {
			o.Profile(true)
		}
		if _, err := tr.Step(x, labels); err != nil {
			t.Fatal(err)
		}
	}
	launches := 0
	for _, kt := range o.Profile(false) {
		if strings.HasPrefix(kt.Name, prefix) {
			launches += kt.Launches
		}
	}
	return launches
}
