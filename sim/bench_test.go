//go:build unix

package sim

import (
	"context"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/solver"
)

// BenchmarkSimOverhead measures what the simulator costs beyond the real
// work: paper-300mbit's adaptive run (two phones and a hub on the virtual
// clock, every message copied, sized and queued, the invariants checked
// every iteration) against the bare solver work of the same iterations in
// one trainer. Both go on in the same benchmark, one after the other, and
// are timed in CPU time of the process (getrusage), which other work on a
// shared machine does not inflate as it does wall time.
//
// There are two bare references, timed alike:
//
//   - "bare": per iteration a gradient of the global batch and three
//     optimizer steps (two phones and the hub), and the one evaluation the
//     run makes at its end;
//   - "split": the same, with the batch computed as the phones compute it,
//     in two gradients of the sizes the run gave them on average: the
//     per-phone fixed costs of a gradient (smaller products, one more pass
//     through the layers) are real work the simulator cannot avoid.
//
// "sim/bare" is the figure to read; "sim/split" is what the simulator's
// own bookkeeping costs on top of the work the phones really do, and
// "overhead_%" the part of the simulator's CPU time that is not bare work.
func BenchmarkSimOverhead(b *testing.B) {
	const iters = 20
	sc, err := LoadScenario("paper-300mbit")
	if err != nil {
		b.Fatal(err)
	}
	sc.Policies, sc.Primary = []string{"adaptive"}, "adaptive"
	sc.GlobalBatch, sc.Iterations, sc.Target = 64, iters, 0
	sc.EvalEvery = 1 << 30 // only the final evaluation, which every run makes
	d, err := mnist()
	if err != nil {
		b.Skipf("MNIST not available: %v", err)
	}
	x := make([]float32, sc.GlobalBatch*28*28)
	labels := make([]int32, sc.GlobalBatch)
	for i := range labels {
		labels[i] = d.Train.Get(i, x[i*28*28:(i+1)*28*28])
	}
	// bare does the work of the run in one trainer, with the batch split
	// in parts (one part: the global batch).
	bare := func(parts []int) {
		be := cpu.NewCPU()
		net, err := models.Build(be, sc.Model, models.Config{})
		if err != nil {
			b.Fatal(err)
		}
		net.InitParams(rand.New(rand.NewPCG(sc.Seed, 1)))
		tr := solver.NewTrainer(net, solver.NewSGD(be, net.NumParams(), 0.9, 0.0005, false), solver.Constant(0.02))
		for range iters {
			lo := 0
			for _, n := range parts {
				tr.Gradient(x[lo*28*28:(lo+n)*28*28], labels[lo:lo+n])
				lo += n
			}
			for range 3 {
				tr.Apply()
			}
		}
		tr.Evaluate(d.Test, 250)
	}
	var simT, bareT, splitT time.Duration
	for b.Loop() {
		t0 := cpuTime(b)
		rep, err := Run(context.Background(), sc, d, Options{Parallel: 1})
		if err != nil {
			b.Fatal(err)
		}
		r := rep.Run("adaptive")
		if r.Iterations != iters {
			b.Fatalf("adaptive ran %d iterations, want %d", r.Iterations, iters)
		}
		simT += cpuTime(b) - t0

		t0 = cpuTime(b)
		bare([]int{sc.GlobalBatch})
		bareT += cpuTime(b) - t0

		first := (r.Devices[0].Samples + iters/2) / iters
		t0 = cpuTime(b)
		bare([]int{first, sc.GlobalBatch - first})
		splitT += cpuTime(b) - t0
	}
	ratio := simT.Seconds() / bareT.Seconds()
	b.ReportMetric(ratio, "sim/bare")
	b.ReportMetric(simT.Seconds()/splitT.Seconds(), "sim/split")
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
