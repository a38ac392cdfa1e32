//go:build opencl

package opencl_test

import (
	"testing"

	"github.com/cotrain/cotrain/gpu/opencl"
)

// openWinograd opens a backend as openForE2E does, with Winograd in mode.
func openWinograd(t testing.TB, mode string) *opencl.OpenCL {
	t.Helper()
	return openUntuned(t, func(cfg *opencl.Config) { cfg.Winograd = mode })
}

// TestOpenCLWinogradTraining: alexnet-small (four 3×3 stride-1
// convolutions, on 8×8 to 4×4 planes) trained five steps with Winograd
// forced on (COTRAIN_OPENCL_WINOGRAD=1) ends with the CPU backend's losses
// (to 1e-4) and parameters (see trainsAlexnetSmallLikeCPU for how near),
// and a second run gives the same bits. A step then runs each of those
// layers' forward and data gradient by Winograd (3 kernels each) and one
// im2col per convolution (for the filter gradient: a Winograd forward
// keeps no columns, so the gradient expands x; the other layers keep
// theirs), where the auto mode picks the three with at least 64 channels
// in and out, and off none.
func TestOpenCLWinogradTraining(t *testing.T) {
	o := openWinograd(t, opencl.WinogradOn)
	defer o.Close()
	trainsAlexnetSmallLikeCPU(t, o)
	checkModeLaunches(t, o, opencl.WinogradOn, openWinograd, "Winograd", "wino_", []modeLaunches{
		// 4 layers (the first conv is strided): forward and data
		// gradient, 3 kernels each.
		{opencl.WinogradOn, 4 * 6, 5},
		// conv 32→96 has too few channels.
		{opencl.WinogradAuto, 3 * 6, 5},
		{opencl.WinogradOff, 0, 5},
	})
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
// seconds); COTRAIN_OPENCL_PROFILE=1 also prints each mode's kernels over
// 5 steps, =shapes split by global size, =layers by layer pass.
func BenchmarkOpenCLWinogradStep(b *testing.B) {
	benchModeStep(b, "winograd", []string{opencl.WinogradOff, opencl.WinogradAuto}, func(cfg *opencl.Config, mode string) { cfg.Winograd = mode })
}
