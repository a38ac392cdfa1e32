package cpu_test

import (
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/solver"
)

// TestMobileNetStepSameBitsAtAnyThreadCount: the kernels MobileNet adds to
// LeNet's (depthwise convolutions, split over channels for the filter
// gradient; batch norm, split over channels; ReLU6) leave the same weights
// and batch-norm statistics, bit for bit, at GOMAXPROCS 1, 2 and 3.
func TestMobileNetStepSameBitsAtAnyThreadCount(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	var ref []float32
	for _, procs := range []int{1, 2, 3} {
		runtime.GOMAXPROCS(procs)
		be := cpu.NewCPU()
		net, err := models.Build(be, "mobilenet-small", models.Config{Width: 0.25})
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(3, 4))
		net.InitParams(r)
		tr := solver.NewTrainer(net, solver.NewSGD(be, net.NumParams(), 0.9, 0, false), solver.Constant(0.05))
		const batch = 6
		x := make([]float32, batch*net.In.Size())
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		labels := make([]int32, batch)
		for i := range labels {
			labels[i] = int32(i % net.Out.Size())
		}
		for i := 0; i < 3; i++ {
			if _, err := tr.Step(x, labels); err != nil {
				t.Fatal(err)
			}
		}
		w := make([]float32, net.NumParams())
		be.Download(w, net.Params)
		if s := net.State; s != nil {
			st := make([]float32, s.Len())
			be.Download(st, s)
			w = append(w, st...)
		}
		if ref == nil {
			ref = w
			continue
		}
		for i := range w {
			if w[i] != ref[i] {
				t.Fatalf("GOMAXPROCS=%d: value %d = %v, at GOMAXPROCS=1 %v", procs, i, w[i], ref[i])
			}
		}
	}
}
