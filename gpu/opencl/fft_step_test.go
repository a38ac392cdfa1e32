//go:build opencl

package opencl_test

import (
	"testing"

	"github.com/cotrain/cotrain/gpu/opencl"
)

// openFFT opens a backend as openForE2E does, with FFT in mode.
func openFFT(t testing.TB, mode string) *opencl.OpenCL {
	t.Helper()
	return openUntuned(t, func(cfg *opencl.Config) { cfg.FFT = mode })
}

// TestOpenCLFFTTraining: alexnet-small (four 3×3 stride-1 convolutions on
// 8×8 to 4×4 planes after a strided one) trained five steps with FFT
// forced on (COTRAIN_OPENCL_FFT=1) ends with the CPU backend's losses (to
// 1e-4) and nearly its parameters (as with Winograd:
// trainsAlexnetSmallLikeCPU), and a second run gives the same bits. A step
// then runs those four layers' three passes by FFT (3 kernels each) and
// im2col only for the strided first convolution (once: it keeps its
// columns), where the auto mode (5×5 filters and larger) picks none of
// them.
func TestOpenCLFFTTraining(t *testing.T) {
	o := openFFT(t, opencl.FFTOn)
	defer o.Close()
	trainsAlexnetSmallLikeCPU(t, o)
	checkModeLaunches(t, o, opencl.FFTOn, openFFT, "FFT", "fft_", []modeLaunches{
		{opencl.FFTOn, 4 * 9, 1},
		{opencl.FFTAuto, 0, 5},
		{opencl.FFTOff, 0, 5},
	})
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
	benchModeStep(b, "fft", []string{opencl.FFTOff, opencl.FFTAuto}, func(cfg *opencl.Config, mode string) { cfg.FFT = mode })
}
