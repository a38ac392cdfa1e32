//go:build opencl

package gpu_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/solver"
)

// openWinograd opens a backend as openForE2E does, with Winograd in mode.
func openWinograd(t testing.TB, mode string) *gpu.OpenCL {
	t.Helper()
	cfg := gpu.DefaultOpenCLConfig()
	cfg.Tune, cfg.Winograd = false, mode
	o, err := gpu.NewOpenCL(cfg)
	if errors.Is(err, gpu.ErrNoOpenCL) || errors.Is(err, gpu.ErrNoDevice) {
		t.Skipf("no OpenCL device: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// winoStepLaunches is how many Winograd kernels and im2col kernels one
// training step of net on o launches.
func winoStepLaunches(t *testing.T, o *gpu.OpenCL, net *solver.Net) (wino, im2col int) {
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
		case strings.HasPrefix(kt.Name, "wino_"):
			wino += kt.Launches
		case strings.HasPrefix(kt.Name, "im2col"):
			im2col += kt.Launches
		}
	}
	return wino, im2col
}

// TestOpenCLWinogradTraining: alexnet-small (four 3×3 stride-1
// convolutions, on 8×8 to 4×4 planes) trained five steps with Winograd
// forced on (COTRAIN_OPENCL_WINOGRAD=1) ends with the CPU backend's losses
// (to 1e-4) and parameters (see below), and a second run gives the same
// bits. A step then runs each of those layers' forward
// and data gradient by Winograd (3 kernels each) and one im2col per
// convolution (for the filter gradient: a Winograd forward keeps no
// columns, so the gradient expands x; the other layers keep theirs),
// where the auto mode picks the three with at least 64 channels in and
// out, and off none.
func TestOpenCLWinogradTraining(t *testing.T) {
	o := openWinograd(t, gpu.WinogradOn)
	defer o.Close()
	wantLoss, want := lenetRun(t, gpu.NewCPU(), "alexnet-small", "sgd", 5)
	gotLoss, got := lenetRun(t, o, "alexnet-small", "sgd", 5)
	for i := range wantLoss {
		if math.Abs(gotLoss[i]-wantLoss[i]) > 1e-4*math.Abs(wantLoss[i]) {
			t.Errorf("step %d: loss %v, want %v", i, gotLoss[i], wantLoss[i])
		}
	}
	// A ReLU input or a pair of max-pool candidates within rounding of each
	// other goes the other way whenever the rounding changes, and Winograd
	// rounds unlike the CPU's im2col: after three steps every parameter is
	// within 4e-9 of the CPU's, after the fifth 120 (of 1.1 million)
	// differ by more than 1e-4, by up to 2.7e-6 (PoCL), while im2col on
	// OpenCL stays within 1.4e-6 relative of the CPU. So: all but 1 in 1,000 parameters within
	// 1e-4 (relative, floor 1e-3), none by more than 1e-5.
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

	for _, c := range []struct {
		mode         string
		wino, im2col int
	}{
		// 4 layers (the first conv is strided): forward and data
		// gradient, 3 kernels each.
		{gpu.WinogradOn, 4 * 6, 5},
		// conv 32→96 has too few channels.
		{gpu.WinogradAuto, 3 * 6, 5},
		{gpu.WinogradOff, 0, 5},
	} {
		b := o
		if c.mode != gpu.WinogradOn {
			b = openWinograd(t, c.mode)
			defer b.Close()
		}
		net, err := models.Build(b, "alexnet-small", models.Config{})
		if err != nil {
			t.Fatal(err)
		}
		net.InitParams(rand.New(rand.NewPCG(1, 2)))
		wino, im2col := winoStepLaunches(t, b, net)
		if wino != c.wino || im2col != c.im2col {
			t.Errorf("mode %s: a training step launched %d Winograd and %d im2col kernels, want %d and %d", c.mode, wino, im2col, c.wino, c.im2col)
		}
	}
}

// BenchmarkOpenCLWinogradStep times AlexNet's training step (224×224,
// batch 32, the batch resident on the device, SGD with momentum) with
// Winograd off and in the auto mode (conv3–conv5 by Winograd) in one run,
// each on a backend of its own opened as cotrain opens one:
//
//	go test -c -tags opencl -o .dev/gpu.test ./gpu
//	.dev/gpu.test -test.run '^$' -test.bench OpenCLWinogradStep -test.benchtime 20x
//
// COTRAIN_BENCH_BATCH sets another batch (on PoCL a step at 32 takes
// seconds); COTRAIN_OPENCL_PROFILE=shapes also prints each mode's
// kernels, split by global size, over 5 steps.
func BenchmarkOpenCLWinogradStep(b *testing.B) {
	batch := gpu.BenchBatch(b)
	for _, mode := range []string{gpu.WinogradOff, gpu.WinogradAuto} {
		b.Run("alexnet/winograd="+mode, func(b *testing.B) {
			cfg := gpu.DefaultOpenCLConfig()
			cfg.Winograd = mode
			o, err := gpu.NewOpenCL(cfg)
			if err != nil {
				b.Skipf("no OpenCL device: %v", err)
			}
			defer o.Close()
			tr, x, labels := stepTrainer(b, o, "alexnet", models.Config{}, batch)
			step := residentStep(o, tr, x, labels)
			timeSteps(b, o, step, 1, batch)
			if p := os.Getenv("COTRAIN_OPENCL_PROFILE"); p != "" {
				o.ProfileShapes(p == "shapes")
				b.StopTimer()
				profileStep(b, o, step)
			}
		})
	}
}
