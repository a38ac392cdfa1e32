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

// openFFT opens a backend as openForE2E does, with FFT in mode.
func openFFT(t testing.TB, mode string) *gpu.OpenCL {
	t.Helper()
	cfg := gpu.DefaultOpenCLConfig()
	cfg.Tune, cfg.FFT = false, mode
	o, err := gpu.NewOpenCL(cfg)
	if errors.Is(err, gpu.ErrNoOpenCL) || errors.Is(err, gpu.ErrNoDevice) {
		t.Skipf("no OpenCL device: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// fftStepLaunches is how many FFT kernels and im2col kernels one training
// step of net on o launches.
func fftStepLaunches(t *testing.T, o *gpu.OpenCL, net *solver.Net) (fft, im2col int) {
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
		case strings.HasPrefix(kt.Name, "fft_"):
			fft += kt.Launches
		case strings.HasPrefix(kt.Name, "im2col"):
			im2col += kt.Launches
		}
	}
	return fft, im2col
}

// TestOpenCLFFTTraining: alexnet-small (four 3×3 stride-1 convolutions on
// 8×8 to 4×4 planes after a strided one) trained five steps with FFT
// forced on (COTRAIN_OPENCL_FFT=1) ends with the CPU backend's losses (to
// 1e-4) and nearly its parameters (see below), and a second run gives the
// same bits. A step then runs those four layers' three passes by FFT (3
// kernels each) and im2col only for the strided first convolution (once:
// it keeps its columns), where the auto mode (5×5 filters and larger)
// picks none of them.
func TestOpenCLFFTTraining(t *testing.T) {
	o := openFFT(t, gpu.FFTOn)
	defer o.Close()
	wantLoss, want := lenetRun(t, gpu.NewCPU(), "alexnet-small", "sgd", 5)
	gotLoss, got := lenetRun(t, o, "alexnet-small", "sgd", 5)
	for i := range wantLoss {
		if math.Abs(gotLoss[i]-wantLoss[i]) > 1e-4*math.Abs(wantLoss[i]) {
			t.Errorf("step %d: loss %v, want %v", i, gotLoss[i], wantLoss[i])
		}
	}
	// As with Winograd (TestOpenCLWinogradTraining): a ReLU input or a
	// max-pool tie within rounding goes the other way once the rounding
	// changes, so a few parameters drift apart; all but 1 in 1,000 within
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
		mode        string
		fft, im2col int
	}{
		{gpu.FFTOn, 4 * 9, 1},
		{gpu.FFTAuto, 0, 5},
		{gpu.FFTOff, 0, 5},
	} {
		b := o
		if c.mode != gpu.FFTOn {
			b = openFFT(t, c.mode)
			defer b.Close()
		}
		net, err := models.Build(b, "alexnet-small", models.Config{})
		if err != nil {
			t.Fatal(err)
		}
		net.InitParams(rand.New(rand.NewPCG(1, 2)))
		fft, im2col := fftStepLaunches(t, b, net)
		if fft != c.fft || im2col != c.im2col {
			t.Errorf("mode %s: a training step launched %d FFT and %d im2col kernels, want %d and %d", c.mode, fft, im2col, c.fft, c.im2col)
		}
	}
}

// BenchmarkOpenCLFFTStep times AlexNet's training step (224×224, batch
// 32, the batch resident on the device, SGD with momentum) with FFT off
// and in the auto mode (conv2 by FFT) in one run, each on a backend of its
// own opened as cotrain opens one (Winograd as COTRAIN_OPENCL_WINOGRAD
// says: auto unless set):
//
//	go test -c -tags opencl -o .dev/gpu.test ./gpu
//	.dev/gpu.test -test.run '^$' -test.bench OpenCLFFTStep -test.benchtime 20x -test.count 3
//
// COTRAIN_BENCH_BATCH sets another batch (on PoCL a step at 32 takes
// seconds); COTRAIN_OPENCL_PROFILE=1 also prints each mode's kernels over
// 5 steps, =shapes split by global size, =layers by layer pass (conv2's
// forward and backward beside the other layers').
func BenchmarkOpenCLFFTStep(b *testing.B) {
	batch := gpu.BenchBatch(b)
	for _, mode := range []string{gpu.FFTOff, gpu.FFTAuto} {
		b.Run("alexnet/fft="+mode, func(b *testing.B) {
			cfg := gpu.DefaultOpenCLConfig()
			cfg.FFT = mode
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
				o.ProfileSections(p == "layers")
				b.StopTimer()
				profileStep(b, o, step)
			}
		})
	}
}
