//go:build opencl

package opencl_test

import (
	"testing"

	"github.com/cotrain/cotrain/gpu/gputest/steptest"
	"github.com/cotrain/cotrain/gpu/opencl"
	"github.com/cotrain/cotrain/models"
)

// BenchmarkOpenCLFuseStep times AlexNet's training step (the batch
// resident on the device, as COTRAIN_BENCH_RESIDENT=1 in
// BenchmarkOpenCLTrainStep) with its ReLUs fused into the convolutions and
// linear layers before them ("fused", solver.Net's default) and run as
// passes of their own ("unfused", Net.SetFusing(false): the step before
// fusing existed), on one backend in one run, alternating:
//
//	.dev/gpu.test -test.run '^$' -test.bench 'OpenCLFuseStep' -test.benchtime 30x -test.count 3
//
// COTRAIN_BENCH_BATCH sets the batch (default 32; on PoCL a batch of 2
// keeps the step to seconds).
func BenchmarkOpenCLFuseStep(b *testing.B) {
	batch := opencl.BenchBatch(b)
	o, err := opencl.New(opencl.EnvConfig())
	if err != nil {
		b.Skipf("no OpenCL device: %v", err)
	}
	defer o.Close()
	for _, mode := range []string{"fused", "unfused"} {
		b.Run("alexnet/"+mode, func(b *testing.B) {
			tr, x, labels := steptest.Trainer(b, o, "alexnet", models.Config{}, batch)
			tr.Net.SetFusing(mode == "fused")
			step := steptest.Resident(o, tr, x, labels)
			timeSteps(b, o, step, 2, batch) // the first Backward asks for the kept matrices
		})
	}
}
