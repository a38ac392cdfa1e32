package solver_test

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/solver"
)

// A steady-state Trainer.Step (upload, forward, loss, backward, optimizer)
// allocates nothing on the CPU backend, for both optimizers and with all or
// only some layers learning (the optimizer then works on views of the flat
// buffers, which it must keep rather than make afresh every step).
func TestTrainerStepAllocatesNothing(t *testing.T) {
	opts := map[string]func(b gpu.Backend, n int) solver.Optimizer{
		"sgd-momentum": func(b gpu.Backend, n int) solver.Optimizer { return solver.NewSGD(b, n, 0.9, 5e-4, false) },
		"adam":         func(b gpu.Backend, n int) solver.Optimizer { return solver.NewAdam(b, n, 0) },
	}
	for _, model := range []string{"lenet5", "lenet-caffe"} {
		for optName, newOpt := range opts {
			for _, trainLast := range []int{0, 1} { // 0: every layer learns
				be := cpu.NewCPU()
				net, err := models.Build(be, model, models.Config{})
				if err != nil {
					t.Fatal(err)
				}
				r := rand.New(rand.NewPCG(1, 2))
				net.InitParams(r)
				if trainLast > 0 {
					net.FreezeAllButLast(trainLast)
				}
				tr := solver.NewTrainer(net, newOpt(be, net.NumParams()), solver.Constant(0.01))
				const batch = 64
				x := make([]float32, batch*net.In.Size())
				for i := range x {
					x[i] = float32(r.NormFloat64())
				}
				labels := make([]int32, batch)
				for i := range labels {
					labels[i] = int32(r.IntN(net.Out.Size()))
				}
				var stepErr error
				step := func() {
					if _, err := tr.Step(x, labels); err != nil {
						stepErr = err
					}
				}
				step() // the first step allocates the batch's buffers and the views
				allocs := testing.AllocsPerRun(5, step)
				if stepErr != nil {
					t.Fatal(stepErr)
				}
				if allocs != 0 {
					t.Errorf("%s, %s, training the last %d layers (0: all): %v allocations per steady-state step, want 0",
						model, optName, trainLast, allocs)
				}
			}
		}
	}
}

// The same optimizer keeps stepping correctly when the buffers or ranges it
// is given change between calls: its cached views must follow them. Two SGD
// optimizers, one fed alternating buffers and one fresh per buffer, must
// leave identical weights.
func TestOptimizerViewsFollowTheirBuffers(t *testing.T) {
	be := cpu.NewCPU()
	const n = 10
	host := func(v ...float32) gpu.Buffer { b := be.Alloc(n); be.Upload(b, v); return b }
	seq := func(scale float32) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = scale * float32(i+1)
		}
		return v
	}
	pA, pB := host(seq(1)...), host(seq(2)...)
	gA, gB := host(seq(0.5)...), host(seq(-0.25)...)
	whole := []solver.Range{{Off: 0, Len: n}}
	part := []solver.Range{{Off: 2, Len: 3}, {Off: 7, Len: 2}}

	shared := solver.NewSGD(be, n, 0, 0, false) // no momentum: the state does not couple the buffers
	shared.Step(pA, gA, whole, 0.1)
	shared.Step(pB, gB, part, 0.1)
	shared.Step(pA, gB, part, 0.1)
	shared.Step(pB, gA, whole, 0.1)

	pA2, pB2 := host(seq(1)...), host(seq(2)...)
	for _, c := range []struct {
		p, g gpu.Buffer
		r    []solver.Range
	}{{pA2, gA, whole}, {pB2, gB, part}, {pA2, gB, part}, {pB2, gA, whole}} {
		solver.NewSGD(be, n, 0, 0, false).Step(c.p, c.g, c.r, 0.1)
	}
	for _, pair := range [][2]gpu.Buffer{{pA, pA2}, {pB, pB2}} {
		got, want := make([]float32, n), make([]float32, n)
		be.Download(got, pair[0])
		be.Download(want, pair[1])
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("weights %v after a reused optimizer, %v after fresh ones", got, want)
			}
		}
	}
}

// The same at two threads, where the kernels hand parts to the pool's
// helper goroutines (testing.AllocsPerRun would run everything on one: it
// sets GOMAXPROCS to 1). Counting every allocation of the process would
// count the runtime's too: a goroutine that sleeps (a helper waiting for
// work, a caller for its helpers) takes a wait record (sudog) from a cache
// that garbage collections empty, and the runtime's background goroutines
// allocate for themselves. So the test records every allocation during ten
// steady-state steps (MemProfileRate 1) and fails on any whose stack is not
// the runtime's sudog cache or a runtime goroutine's own (see below for why
// it may look at up to four windows).
func TestTrainerStepAllocatesNothingOnTwoThreads(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	defer func(r int) { runtime.MemProfileRate = r }(runtime.MemProfileRate)
	for _, model := range []string{"lenet5", "lenet-caffe", "mobilenet-small"} {
		be := cpu.NewCPU()
		cfg := models.Config{}
		if model == "mobilenet-small" {
			cfg.Width = 0.25
		}
		net, err := models.Build(be, model, cfg)
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(1, 2))
		net.InitParams(r)
		tr := solver.NewTrainer(net, solver.NewSGD(be, net.NumParams(), 0.9, 0, false), solver.Constant(0.01))
		const batch = 32
		x := make([]float32, batch*net.In.Size())
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		labels := make([]int32, batch)
		for i := range labels {
			labels[i] = int32(r.IntN(net.Out.Size()))
		}
		step := func() {
			if _, err := tr.Step(x, labels); err != nil {
				t.Fatal(err)
			}
		}
		for range 10 { // the helpers' scratch grows the first times they take part
			step()
		}
		// Ten steps may still leave a helper that has never run the
		// largest part of some kernel (the caller can take every part of a
		// job before a helper wakes): its scratch then grows once, later.
		// An allocation made every step shows in every window of ten, so
		// the test fails only when none of four windows is clean.
		var leaks []string
		for range 4 {
			runtime.MemProfileRate = 1
			before := ourAllocs()
			for range 10 {
				step()
			}
			after := ourAllocs()
			runtime.MemProfileRate = 512 * 1024
			leaks = leaks[:0]
			for stack, n := range after {
				if d := n - before[stack]; d > 0 {
					leaks = append(leaks, fmt.Sprintf("%d allocations at\n%s", d, stack))
				}
			}
			if len(leaks) == 0 {
				break
			}
		}
		for _, l := range leaks {
			t.Errorf("%s at GOMAXPROCS=2, in each of four windows of 10 steady-state steps; in the last, %s", model, l)
		}
	}
}

// ourAllocs returns the allocation counts of the memory profile by stack,
// leaving out the runtime's sudog cache, its own and stacks with no cotrain
// frame.
// The profile is as of the last completed garbage collection, hence the
// two collections first.
func ourAllocs() map[string]int64 {
	runtime.GC()
	runtime.GC()
	var recs []runtime.MemProfileRecord
	for {
		n, ok := runtime.MemProfile(recs, true)
		if ok {
			recs = recs[:n]
			break
		}
		recs = make([]runtime.MemProfileRecord, n+64)
	}
	out := map[string]int64{}
	for _, rec := range recs {
		var b strings.Builder
		ours, skip := false, false
		frames := runtime.CallersFrames(rec.Stack())
		for {
			f, more := frames.Next()
			switch {
			case f.Function == "runtime.acquireSudog", strings.HasSuffix(f.Function, "solver_test.ourAllocs"):
				skip = true // the runtime's, or this function's own
			case strings.HasPrefix(f.Function, "github.com/cotrain/cotrain/"):
				ours = true
			}
			fmt.Fprintf(&b, "\t%s\n", f.Function)
			if !more {
				break
			}
		}
		if ours && !skip {
			out[b.String()] += rec.AllocObjects
		}
	}
	return out
}
