//go:build opencl

package opencl_test

import (
	"testing"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/gputest/steptest"
	"github.com/cotrain/cotrain/gpu/opencl"
	"github.com/cotrain/cotrain/models"
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
	batch := opencl.BenchBatch(b)
	o, err := opencl.New(opencl.EnvConfig())
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
				tr, x, labels := steptest.Trainer(b, be, model, models.Config{}, batch)
				step := steptest.Resident(be, tr, x, labels)
				timeSteps(b, o, step, 2, batch) // the first Backward asks for the kept matrices
			})
		}
	}
}

// timeSteps runs step warm times untimed, then b.N times timed, waiting for
// the device before and after, and reports images per second.
func timeSteps(b *testing.B, o *opencl.OpenCL, step func(), warm, batch int) {
	b.Helper()
	for range warm {
		step()
	}
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
}
