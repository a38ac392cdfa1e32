//go:build opencl

package gpu_test

import (
	"math/rand/v2"
	"os"
	"strconv"
	"testing"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/solver"
)

// hideKeeper hides a backend's gpu.ConvColumnKeeper: its convolutions
// expand x again for the filter gradient.
type hideKeeper struct{ gpu.Backend }

// BenchmarkOpenCLKeepColumnsStep times training steps (the batch resident
// on the device, as COTRAIN_BENCH_RESIDENT=1 in BenchmarkOpenCLTrainStep)
// with each convolution's column matrix kept from the forward for the
// filter gradient ("kept") and expanded twice ("twice"), on one backend in
// one run:
//
//	.dev/gpu.test -test.run '^$' -test.bench 'OpenCLKeepColumnsStep' -test.benchtime 20x -test.count 3
//
// COTRAIN_BENCH_BATCH sets the batch (default 32; on PoCL a batch of 2
// keeps AlexNet's step to seconds).
func BenchmarkOpenCLKeepColumnsStep(b *testing.B) {
	batch := 32
	if v := os.Getenv("COTRAIN_BENCH_BATCH"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			b.Fatalf("COTRAIN_BENCH_BATCH=%q: want a positive batch", v)
		}
		batch = n
	}
	o, err := gpu.NewOpenCL(gpu.DefaultOpenCLConfig())
	if err != nil {
		b.Skipf("no OpenCL device: %v", err)
	}
	defer o.Close()
	for _, model := range []string{"alexnet", "mobilenet-v1"} {
		for _, mode := range []string{"kept", "twice"} {
			b.Run(model+"/"+mode, func(b *testing.B) {
				var be gpu.Backend = o
				if mode == "twice" {
					be = hideKeeper{o}
				}
				net, err := models.Build(be, model, models.Config{})
				if err != nil {
					b.Fatal(err)
				}
				net.InitParams(rand.New(rand.NewPCG(1, 2)))
				tr := solver.NewTrainer(net, solver.NewSGD(be, net.NumParams(), 0.9, 0, false), solver.Constant(0.01))
				r := rand.New(rand.NewPCG(5, 6))
				x := make([]float32, batch*net.In.Size())
				for i := range x {
					x[i] = float32(r.NormFloat64())
				}
				labels := make([]int32, batch)
				for i := range labels {
					labels[i] = int32(i % net.Out.Size())
				}
				xb := be.Alloc(len(x))
				be.Upload(xb, x)
				step := func() {
					logits := tr.Net.Forward(xb, batch, true)
					tr.Loss.Forward(be, logits, labels)
					tr.Net.Backward(tr.Loss.Backward(be))
					tr.Apply()
				}
				step() // the first Backward asks for the kept matrices
				step()
				if err := o.Finish(); err != nil {
					b.Fatal(err)
				}
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					step()
				}
				if err := o.Finish(); err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "img/s")
			})
		}
	}
}
