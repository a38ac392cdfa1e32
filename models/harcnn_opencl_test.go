//go:build opencl

package models

import (
	"errors"
	"log/slog"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/gpu/opencl"
	"github.com/cotrain/cotrain/solver"
)

// har-cnn's 1×k convolutions and pools on OpenCL give the CPU's logits and
// gradients, to a relative 1e-4, through every convolution path that takes
// them: im2col and GEMM (3×128 windows: no padded plane fits the FFT's
// 32×32), and FFT forced on for 3×24 windows, whose padded planes (1×30,
// 1×16, 1×8) fit it; Winograd takes 3×3 filters only, never a 1×k one.
func TestHARCNNOnOpenCL(t *testing.T) {
	for _, tc := range []struct {
		name string
		l    int
		fft  string
	}{
		{"im2col/3x128", 128, opencl.FFTOff},
		{"fft/3x24", 24, opencl.FFTOn},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := opencl.DefaultConfig()
			cfg.Tune, cfg.FFT = false, tc.fft
			// The backend logs each geometry's convolution path at debug
			// level: the test checks that FFT ran where it was forced on.
			var paths strings.Builder
			cfg.Log = slog.New(slog.NewTextHandler(&paths, &slog.HandlerOptions{Level: slog.LevelDebug}))
			o, err := opencl.New(cfg)
			if errors.Is(err, gpu.ErrNoOpenCL) || errors.Is(err, gpu.ErrNoDevice) {
				t.Skipf("no OpenCL device: %v", err)
			}
			if err != nil {
				t.Fatal(err)
			}
			defer o.Close()
			c := Config{Classes: 5, Input: solver.Shape{C: 3, H: 1, W: tc.l}}
			var outs, grads [2][]float32
			for i, b := range []gpu.Backend{cpu.NewCPU(), o} {
				net, err := Build(b, "har-cnn", c)
				if err != nil {
					t.Fatal(err)
				}
				net.InitParams(rand.New(rand.NewPCG(3, 4)))
				outs[i], grads[i] = harStep(net, 16)
			}
			if e := relDiff(outs[1], outs[0]); !(e <= 1e-4) {
				t.Errorf("logits: relative difference %.3g from the CPU's", e)
			}
			if e := relDiff(grads[1], grads[0]); !(e <= 1e-4) {
				t.Errorf("gradients: relative difference %.3g from the CPU's", e)
			}
			if ran := strings.Contains(paths.String(), "fft=true"); ran != (tc.fft == opencl.FFTOn) {
				t.Errorf("FFT ran: %v, want %v; the backend's path log:\n%s", ran, tc.fft == opencl.FFTOn, paths.String())
			}
		})
	}
}

// harStep runs a training-mode forward and the loss's backward on n random
// windows and returns the logits and the flat gradient.
func harStep(net *solver.Net, n int) (logits, grads []float32) {
	r := rand.New(rand.NewPCG(5, 6))
	x := make([]float32, n*net.In.Size())
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	labels := make([]int32, n)
	for i := range labels {
		labels[i] = int32(i % net.Out.Size())
	}
	tr := solver.NewTrainer(net, solver.NewSGD(net.B, net.NumParams(), 0, 0, false), solver.Constant(0))
	logits = make([]float32, n*net.Out.Size())
	net.B.Download(logits, tr.Logits(x, n))
	if _, err := tr.Step(x, labels); err != nil { // lr 0: the gradient, weights unchanged
		panic(err)
	}
	grads = make([]float32, net.Grads.Len())
	net.B.Download(grads, net.Grads)
	return logits, grads
}

// relDiff is max|a-b| / max|b|.
func relDiff(a, b []float32) float64 {
	var d, s float64
	for i := range b {
		d = max(d, math.Abs(float64(a[i])-float64(b[i])))
		s = max(s, math.Abs(float64(b[i])))
	}
	return d / s
}
