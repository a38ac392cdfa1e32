//go:build opencl

package opencl_test

import (
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/gpu/gputest/steptest"
	"github.com/cotrain/cotrain/gpu/opencl"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/solver"
)

// A convolution path chosen by a mode of the backend's configuration (FFT,
// Winograd), checked and timed over whole training steps: the helpers that
// TestOpenCLFFTTraining and TestOpenCLWinogradTraining, and
// BenchmarkOpenCLFFTStep and BenchmarkOpenCLWinogradStep, share.

// trainsAlexnetSmallLikeCPU trains alexnet-small five steps with SGD on the
// CPU backend and on o and checks that o ends with the CPU's losses (to
// 1e-4) and nearly its parameters, and that a second run on o gives the
// same bits.
//
// Nearly: a ReLU input or a pair of max-pool candidates within rounding of
// each other goes the other way whenever the rounding changes, and
// Winograd or FFT rounds unlike the CPU's im2col. With Winograd, after three
// steps every parameter is within 4e-9 of the CPU's, after the fifth 120
// (of 1.1 million) differ by more than 1e-4, by up to 2.7e-6 (PoCL), while
// im2col on OpenCL stays within 1.4e-6 relative of the CPU. So: all but 1
// in 1,000 parameters within 1e-4 (relative, floor 1e-3), none by more
// than 1e-5.
func trainsAlexnetSmallLikeCPU(t *testing.T, o *opencl.OpenCL) {
	t.Helper()
	wantLoss, want := lenetRun(t, cpu.NewCPU(), "alexnet-small", "sgd", 5)
	gotLoss, got := lenetRun(t, o, "alexnet-small", "sgd", 5)
	for i := range wantLoss {
		if math.Abs(gotLoss[i]-wantLoss[i]) > 1e-4*math.Abs(wantLoss[i]) {
			t.Errorf("step %d: loss %v, want %v", i, gotLoss[i], wantLoss[i])
		}
	}
	bad, worst, worstAbs := paramDiff(want, got)
	if bad > len(want)/1000 || worstAbs > 1e-5 {
		t.Errorf("%d parameters differ by more than 1e-4, worst by %.3g", bad, worstAbs)
	}
	t.Logf("losses %v; worst parameter difference %.3g relative, %.3g absolute; %d over 1e-4", gotLoss, worst, worstAbs, bad)
	_, again := lenetRun(t, o, "alexnet-small", "sgd", 5)
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(again[i]) {
			t.Fatalf("second OpenCL run differs at parameter %d", i)
		}
	}
}

// modeLaunches is, for one mode, how many kernels of the path and im2col
// kernels a training step of alexnet-small must launch.
type modeLaunches struct {
	mode         string
	path, im2col int
}

// checkModeLaunches builds alexnet-small for each case, on o for the mode o
// was opened with (onMode) and on a backend open(mode) gives for the
// others, and checks how many kernels whose names start with prefix (the
// path's, called what in errors) and im2col kernels one training step
// launches.
func checkModeLaunches(t *testing.T, o *opencl.OpenCL, onMode string, open func(testing.TB, string) *opencl.OpenCL, what, prefix string, cases []modeLaunches) {
	t.Helper()
	for _, c := range cases {
		b := o
		if c.mode != onMode {
			b = open(t, c.mode)
			defer b.Close()
		}
		net, err := models.Build(b, "alexnet-small", models.Config{})
		if err != nil {
			t.Fatal(err)
		}
		net.InitParams(rand.New(rand.NewPCG(1, 2)))
		path, im2col := stepLaunches(t, b, net, prefix)
		if path != c.path || im2col != c.im2col {
			t.Errorf("mode %s: a training step launched %d %s and %d im2col kernels, want %d and %d", c.mode, path, what, im2col, c.path, c.im2col)
		}
	}
}

// stepLaunches is how many kernels whose names start with prefix and how
// many im2col kernels one training step of net on o launches (the second
// step: the first builds what is kept).
func stepLaunches(t *testing.T, o *opencl.OpenCL, net *solver.Net, prefix string) (path, im2col int) {
	t.Helper()
	tr := solver.NewTrainer(net, solver.NewSGD(o, net.NumParams(), 0.9, 0, false), solver.Constant(0.01))
	x := make([]float32, 4*net.In.Size())
	for i := range x {
		x[i] = float32(i%7) - 3
	}
	labels := []int32{1, 2, 3, 4}
	for s := 0; s < 2; s++ {
		if s == 1 {
			o.Profile(true)
		}
		if _, err := tr.Step(x, labels); err != nil {
			t.Fatal(err)
		}
	}
	for _, kt := range o.Profile(false) {
		switch {
		case strings.HasPrefix(kt.Name, prefix):
			path += kt.Launches
		case strings.HasPrefix(kt.Name, "im2col"):
			im2col += kt.Launches
		}
	}
	return path, im2col
}

// benchModeStep times AlexNet's training step (the batch resident on the
// device, SGD with momentum) in each of modes, one sub-benchmark
// "alexnet/<name>=<mode>" each, on a backend of its own opened as cotrain
// opens one with set(cfg, mode) applied. With COTRAIN_OPENCL_PROFILE set it
// also prints each mode's kernels over 5 steps (=shapes split by global
// size, =layers by layer pass).
func benchModeStep(b *testing.B, name string, modes []string, set func(cfg *opencl.Config, mode string)) {
	batch := opencl.BenchBatch(b)
	for _, mode := range modes {
		b.Run("alexnet/"+name+"="+mode, func(b *testing.B) {
			cfg := opencl.EnvConfig()
			set(&cfg, mode)
			o, err := opencl.New(cfg)
			if err != nil {
				b.Skipf("no OpenCL device: %v", err)
			}
			defer o.Close()
			tr, x, labels := steptest.Trainer(b, o, "alexnet", models.Config{}, batch)
			step := steptest.Resident(o, tr, x, labels)
			timeSteps(b, o, step, 1, batch)
			if p := os.Getenv("COTRAIN_OPENCL_PROFILE"); p != "" {
				o.ProfileShapes(p == "shapes")
				o.ProfileSections(p == "layers")
				b.StopTimer()
				profileStep(b, o, step)
			}
		})
	}
}
