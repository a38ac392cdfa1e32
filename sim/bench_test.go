//go:build unix

package sim

import (
	"context"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/solver"
)

// BenchmarkSimOverhead measures what the simulator costs beyond the real
// gradient work: paper-300mbit's adaptive run (two phones and a hub on the
// virtual clock, every message encoded, sent through the in-memory
// transport and decoded, the invariants checked every iteration) against
// the bare solver work of the same iterations in one trainer — a gradient
// of the global batch and three optimizer steps (two phones and the hub)
// per iteration. Both go on in the same benchmark, one after the other, and
// are timed in CPU time of the process (getrusage), which other work on a
// shared machine does not inflate as it does wall time. The ratio
// ("sim/bare") is what to read; "overhead_%" is the part of the
// simulator's CPU time that is not the bare work.
func BenchmarkSimOverhead(b *testing.B) {
	const iters = 20
	sc, err := LoadScenario("paper-300mbit")
	if err != nil {
		b.Fatal(err)
	}
	sc.Policies, sc.Primary = []string{"adaptive"}, "adaptive"
	sc.GlobalBatch, sc.Iterations, sc.Target = 64, iters, 0
	sc.EvalEvery = 1 << 30 // no evaluation: it is real work of another kind
	d, err := mnist()
	if err != nil {
		b.Skipf("MNIST not available: %v", err)
	}
	x := make([]float32, sc.GlobalBatch*28*28)
	labels := make([]int32, sc.GlobalBatch)
	for i := range labels {
		labels[i] = d.Train.Get(i, x[i*28*28:(i+1)*28*28])
	}
	var simT, bareT time.Duration
	for b.Loop() {
		t0 := cpuTime(b)
		rep, err := Run(context.Background(), sc, d, Options{Parallel: 1})
		if err != nil {
			b.Fatal(err)
		}
		if r := rep.Run("adaptive"); r.Iterations != iters {
			b.Fatalf("adaptive ran %d iterations, want %d", r.Iterations, iters)
		}
		simT += cpuTime(b) - t0

		t0 = cpuTime(b)
		be := gpu.NewCPU()
		net, err := models.Build(be, sc.Model, models.Config{})
		if err != nil {
			b.Fatal(err)
		}
		net.InitParams(rand.New(rand.NewPCG(sc.Seed, 1)))
		tr := solver.NewTrainer(net, solver.NewSGD(be, net.NumParams(), 0.9, 0.0005, false), solver.Constant(0.02))
		for range iters {
			tr.Gradient(x, labels)
			for range 3 {
				tr.Apply()
			}
		}
		bareT += cpuTime(b) - t0
	}
	ratio := simT.Seconds() / bareT.Seconds()
	b.ReportMetric(ratio, "sim/bare")
	b.ReportMetric(100*(1-1/ratio), "overhead_%")
}

// cpuTime returns the user and system CPU time the process has used.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
