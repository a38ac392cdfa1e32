package solver_test

import (
	"math/rand/v2"
	"testing"

	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/solver"
)

// BenchmarkFrozenPrefixStep times a fine-tuning step of MobileNet v1 (α
// 0.25, 3×64×64, batch 16) with the last layer alone learning, its frozen
// prefix run as inference with its batch norm folded into the convolutions
// (the default), unfolded (Net.SetFolding), and in training mode
// (Net.SetFrozenInference), beside a step with every layer learning.
func BenchmarkFrozenPrefixStep(b *testing.B) {
	for _, c := range []struct {
		name            string
		last            int // 0: all learn
		inference, fold bool
	}{
		{"train-last-1/folded", 1, true, true}, {"train-last-1/unfolded", 1, true, false},
		{"train-last-1/training", 1, false, true}, {"all", 0, true, true},
	} {
		b.Run(c.name, func(b *testing.B) {
			be := cpu.NewCPU()
			net, err := models.Build(be, "mobilenet-v1", models.Config{Width: 0.25, Classes: 10, Input: solver.Shape{C: 3, H: 64, W: 64}})
			if err != nil {
				b.Fatal(err)
			}
			r := rand.New(rand.NewPCG(1, 2))
			net.InitParams(r)
			if c.last > 0 {
				net.FreezeAllButLast(c.last)
			}
			net.SetFrozenInference(c.inference)
			net.SetFolding(c.fold)
			tr := solver.NewTrainer(net, solver.NewSGD(be, net.NumParams(), 0.9, 0, false), solver.Constant(0.01))
			const batch = 16
			x := make([]float32, batch*net.In.Size())
			for i := range x {
				x[i] = float32(r.NormFloat64())
			}
			labels := make([]int32, batch)
			for i := range labels {
				labels[i] = int32(i % 10)
			}
			for b.Loop() {
				if _, err := tr.Step(x, labels); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRefold times folding the batch norm of MobileNet v1's frozen
// prefix (α 0.25, 3×64×64) into its convolutions once: what a Forward
// after ParamsChanged adds (a worker's, after every merged update that
// carries batch-norm statistics).
func BenchmarkRefold(b *testing.B) {
	be := cpu.NewCPU()
	net, err := models.Build(be, "mobilenet-v1", models.Config{Width: 0.25, Classes: 10, Input: solver.Shape{C: 3, H: 64, W: 64}})
	if err != nil {
		b.Fatal(err)
	}
	net.InitParams(rand.New(rand.NewPCG(1, 2)))
	net.FreezeAllButLast(1)
	x := be.Alloc(net.In.Size())
	net.Forward(x, 1, false)
	for b.Loop() {
		net.ParamsChanged()
		net.Refold()
	}
	b.ReportMetric(float64(net.FoldedSize()), "folded-floats")
}

// BenchmarkPrefixCacheStep times BenchmarkFrozenPrefixStep's train-last-1
// step (MobileNet v1, α 0.25, 3×64×64, batch 16, folded) with the static
// prefix computed, and served from the prefix cache (the same batch's
// identities every step: after the first, every sample is cached).
func BenchmarkPrefixCacheStep(b *testing.B) {
	for _, cached := range []bool{false, true} {
		name := "computed"
		if cached {
			name = "cached"
		}
		b.Run(name, func(b *testing.B) {
			be := cpu.NewCPU()
			net, err := models.Build(be, "mobilenet-v1", models.Config{Width: 0.25, Classes: 10, Input: solver.Shape{C: 3, H: 64, W: 64}})
			if err != nil {
				b.Fatal(err)
			}
			r := rand.New(rand.NewPCG(1, 2))
			net.InitParams(r)
			net.FreezeAllButLast(1)
			var ids []int64
			if cached {
				net.SetPrefixCache(64 << 20)
				ids = make([]int64, 16)
				for i := range ids {
					ids[i] = int64(i)
				}
			}
			tr := solver.NewTrainer(net, solver.NewSGD(be, net.NumParams(), 0.9, 0, false), solver.Constant(0.01))
			x := make([]float32, 16*net.In.Size())
			for i := range x {
				x[i] = float32(r.NormFloat64())
			}
			labels := make([]int32, 16)
			for i := range labels {
				labels[i] = int32(i % 10)
			}
			// The first step fills the cache, outside the timing.
			if _, err := tr.StepIDs(x, labels, ids); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if _, err := tr.StepIDs(x, labels, ids); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
