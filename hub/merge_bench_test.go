//go:build unix

package hub_test

import (
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/hub"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/solver"
	"github.com/cotrain/cotrain/sync/wire"
)

// mergeBench is a hub core for lenet-caffe (431,080 parameters, SGD with
// momentum) with its workers registered and iteration 0 open, and one
// prepared push per worker.
type mergeBench struct {
	h      *testCore
	ids    []string
	pushes []*wire.Push
}

func newMergeBench(b *testing.B, workers int) *mergeBench {
	b.Helper()
	be := cpu.NewCPU()
	net, err := models.Build(be, "lenet-caffe", models.Config{})
	if err != nil {
		b.Fatal(err)
	}
	net.InitParams(rand.New(rand.NewPCG(1, 1)))
	tr := solver.NewTrainer(net, solver.NewSGD(be, net.NumParams(), 0.9, 0, false), solver.Constant(0.01))
	cfg := hub.DefaultConfig()
	cfg.Compression, cfg.Overlap = "none", false // whole float32 gradients, the case
	cfg.MinWorkers, cfg.MaxWorkers, cfg.GlobalBatch = workers, workers, 64*workers
	cfg.Batch, cfg.DeadlineTicks = hub.Fixed, 0
	h, err := newTestCore(cfg, hub.Model{Name: "lenet-caffe", Trainer: tr})
	if err != nil {
		b.Fatal(err)
	}
	mb := &mergeBench{h: h}
	n := net.NumParams()
	r := rand.New(rand.NewPCG(2, 2))
	for i := range workers {
		id := fmt.Sprintf("w%02d", i)
		if err := h.Step(id, &wire.Register{Device: "bench"}); err != nil {
			b.Fatal(err)
		}
		g := make(wire.Floats, n)
		for j := range g {
			g[j] = float32(r.NormFloat64()) * 1e-3
		}
		mb.ids = append(mb.ids, id)
		mb.pushes = append(mb.pushes, &wire.Push{Samples: 64, ComputeNanos: 1e7, Loss: 2.3, Gradient: g})
	}
	h.Advance()
	return mb
}

// round feeds every worker's push for the open iteration, in an order
// that is not the workers' id order, and checks that the last one closed
// the iteration with a Merged for every worker.
func (mb *mergeBench) round(b *testing.B) {
	it := mb.h.Iteration()
	n := len(mb.pushes)
	for k := range n {
		i := (k*7 + 3) % n // a permutation for n not a multiple of 7
		p := mb.pushes[i]
		p.Iteration = it
		if err := mb.h.Step(mb.ids[i], p); err != nil {
			b.Fatal(err)
		}
	}
	if mb.h.Iteration() != it+1 {
		b.Fatalf("iteration %d after every push, want %d", mb.h.Iteration(), it+1)
	}
	merged := 0
	for _, e := range mb.h.Ready().Messages {
		if _, ok := e.Msg.(*wire.Merged); ok {
			merged++
		}
	}
	if merged != n {
		b.Fatalf("%d Merged after the last push, want %d", merged, n)
	}
	mb.h.Advance()
}

// cpuTime is the process's user and system time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkMerge64 is the hub's work for one iteration of 64 workers on
// lenet-caffe: from the first push handed to the core to the Merged
// (with the step applied and the weights hashed) ready for every worker:
// checking and copying 64 gradients of 431,080 values, their weighted
// mean, the optimizer step and the hash. Run it with -cpu 1 (the target
// is under 20 ms per merge on one core). Besides wall time it reports the
// process's CPU time per merge (cpu-ms/merge), which other users of a
// shared machine disturb less.
func BenchmarkMerge64(b *testing.B) {
	for _, workers := range []int{2, 8, 64} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			mb := newMergeBench(b, workers)
			mb.round(b) // first-use allocations
			b.SetBytes(int64(workers) * 4 * int64(len(mb.pushes[0].Gradient)))
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := cpuTime()
			for range b.N {
				mb.round(b)
			}
			cpu := cpuTime() - cpu0
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1e3/float64(b.N), "ms/merge")
			b.ReportMetric(float64(cpu.Microseconds())/1e3/float64(b.N), "cpu-ms/merge")
		})
	}
}
