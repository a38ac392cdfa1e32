package models

import (
	"math/rand/v2"
	"testing"

	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/solver"
)

// trainStepCases are the training steps scripts/bench_step.sh compares with
// PyTorch (scripts/bench_torch.py builds the same networks and batches).
var trainStepCases = []struct {
	name  string // sub-benchmark name, as bench_torch.py prints it
	model string
	cfg   Config
	batch int
}{
	{"lenet5/b64", "lenet5", Config{}, 64},
	{"lenet-caffe/b64", "lenet-caffe", Config{}, 64},
	// MobileNet v1 at α=0.5 on 128x128 inputs, 1000 classes: the depthwise,
	// batch-norm and 1x1 convolutions that phones train.
	{"mobilenet-a0.5-128/b16", "mobilenet-v1", Config{Classes: 1000, Input: solver.Shape{C: 3, H: 128, W: 128}, Width: 0.5}, 16},
	// har-cnn on 3×128 accelerometer windows, 6 activities: 1×k
	// convolutions and pools, batch norm, global average pooling.
	{"har-cnn/b64", "har-cnn", Config{}, 64},
}

// BenchmarkTrainStep times one full training step (upload, forward, loss,
// backward, SGD with momentum 0.9) on a batch of random samples on the CPU
// backend. scripts/bench_torch.py times the same steps in PyTorch; run with
// -cpu 1,2 for the two-thread speed-up. allocs/op must stay 0
// (solver's TestTrainerStepAllocatesNothing).
func BenchmarkTrainStep(b *testing.B) {
	for _, tc := range trainStepCases {
		b.Run(tc.name, func(b *testing.B) {
			be := cpu.NewCPU()
			net, err := Build(be, tc.model, tc.cfg)
			if err != nil {
				b.Fatal(err)
			}
			net.InitParams(rand.New(rand.NewPCG(1, 2)))
			tr := solver.NewTrainer(net, solver.NewSGD(be, net.NumParams(), 0.9, 0, false), solver.Constant(0.01))
			r := rand.New(rand.NewPCG(5, 6))
			x := make([]float32, tc.batch*net.In.Size())
			for i := range x {
				x[i] = float32(r.NormFloat64())
			}
			labels := make([]int32, tc.batch)
			for i := range labels {
				labels[i] = int32(i % net.Out.Size())
			}
			if _, err := tr.Step(x, labels); err != nil { // allocate the per-batch buffers outside the timing
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := tr.Step(x, labels); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*tc.batch)/b.Elapsed().Seconds(), "img/s")
		})
	}
}
