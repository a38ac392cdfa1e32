package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/cotrain/cotrain/cmd/internal/cli"
	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/solver"
)

// runProfile measures training steps of a registered model, or of a model
// file as `cotrain finetune` starts from it (--weights, --train-last), on
// random data: time per step, the Go heap and the process's peak resident
// memory, the figures to set beside PyTorch's (scripts/mem_step.sh,
// scripts/compare_cpu.sh). It is a measurement tool: the data are noise and
// the result is not saved.
func runProfile(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("profile", stderr, "cotrain profile --model NAME|--weights FILE [--train-last N|all] [--width A] [--input CxHxW] [--batch N] [--steps K] [--memory-budget SIZE] [--json]",
		"Times training steps of a built-in model, or of a model file fine-tuned as cotrain finetune does, on random data and reports their peak memory.")
	model := fs.String("model", "mobilenet-v1", "model: "+fmt.Sprint(models.Names()))
	weights := fs.String("weights", "", "time fine-tuning this weight file or ONNX model instead of --model (its own weights, head and input; --width, --classes and --input do not apply)")
	trainLast := fs.String("train-last", "all", "with --weights: "+cli.TrainLastUsage)
	frozenInfer := fs.Bool("frozen-inference", true, "run the frozen layers below the first trained one as inference (running batch-norm statistics, nothing kept for backward); false: in training mode, to measure the difference")
	width := fs.Float64("width", 0, "width multiplier (0: the model's default)")
	classes := fs.Int("classes", 0, "classes (0: the model's default)")
	input := fs.String("input", "", "input shape CxHxW (empty: the model's default)")
	batch := fs.Int("batch", 8, "mini-batch size")
	steps := fs.Int("steps", 2, "training steps (forward, backward, SGD-momentum update) to run")
	memprofile := fs.String("memprofile", "", "write a heap profile (pprof) after the last step to this file")
	resident := fs.Bool("resident", false, "upload the batch once and keep it on the device, as a benchmark that keeps PyTorch's batch on the GPU does (default: each step uploads it, as training does)")
	kprof := fs.String("kernel-profile", "", "after the timed steps, time 5 more kernel by kernel on OpenCL and print the table to stderr: kernels, or layers (each kernel under the layer pass that launched it)")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile (pprof) of the steps after the first to this file")
	asJSON := fs.Bool("json", false, "print one JSON line")
	device := fs.String("device", "cpu", deviceUsage)
	budget := fs.String("memory-budget", "", cli.MemoryBudgetUsage)
	if err := parse(fs, args); err != nil {
		return err
	}
	if *batch < 1 || *steps < 1 {
		return fmt.Errorf("%w: --batch and --steps must be positive", errUsage)
	}
	if err := cli.CheckTrainLast(*trainLast); err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if *kprof != "" && *kprof != "kernels" && *kprof != "layers" {
		return fmt.Errorf("%w: --kernel-profile %q: want kernels or layers", errUsage, *kprof)
	}
	mc := models.Config{Classes: *classes, Width: *width}
	if *input != "" {
		if _, err := fmt.Sscanf(*input, "%dx%dx%d", &mc.Input.C, &mc.Input.H, &mc.Input.W); err != nil {
			return fmt.Errorf("%w: --input %q: want CxHxW", errUsage, *input)
		}
	}
	b, release, err := openDevice(*device, stderr)
	if err != nil {
		return err
	}
	defer release()
	rssBefore := peakRSS()
	r := rand.New(rand.NewPCG(1, 2))
	var net *solver.Net
	if *weights != "" {
		f, err := cli.LoadModel(*weights, "")
		if err != nil {
			return err
		}
		if net, err = f.Build(b); err != nil {
			return err
		}
		if err := cli.TrainLast(net, *trainLast); err != nil {
			return fmt.Errorf("%w: %v", errUsage, err)
		}
		net.SetFrozenInference(*frozenInfer)
		*model = f.DisplayName()
	} else {
		if net, err = models.Build(b, *model, mc); err != nil {
			return err
		}
		net.InitParams(r)
	}
	net.SetRand(rand.New(rand.NewPCG(1, 3)))
	tr := solver.NewTrainer(net, solver.NewSGD(b, net.NumParams(), 0.9, 0, false), solver.Constant(0.01))
	x := make([]float32, *batch*net.In.Size())
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	if net.CheckInput(x) != nil {
		// A language model reads token ids: random words of its vocabulary.
		for i := range x {
			x[i] = float32(r.IntN(net.Out.Size()))
		}
	}
	labels := make([]int32, *batch)
	for i := range labels {
		labels[i] = int32(r.IntN(net.Out.Size()))
	}
	step := func() error { _, err := tr.Step(x, labels); return err }
	var xb gpu.Buffer
	if *resident {
		// Allocated before the budget is fitted, so that fitBudget counts it
		// among the device's allocations outside the step.
		xb = b.Alloc(len(x))
		b.Upload(xb, x)
	}
	plan, budgetBytes, err := fitBudget(b, net, tr.Opt, *budget, *batch)
	if err != nil {
		return err
	}
	if *resident {
		step = func() error {
			logits := net.Forward(xb, *batch, true)
			if loss := tr.Loss.Forward(b, logits, labels); math.IsNaN(loss) || math.IsInf(loss, 0) {
				return fmt.Errorf("profile: loss %v", loss)
			}
			net.Backward(tr.Loss.Backward(b))
			tr.Apply()
			return nil
		}
	}
	var first, rest, cpu0 time.Duration
	for s := 0; s < *steps; s++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		t0 := time.Now()
		if err := step(); err != nil {
			return err
		}
		if s == 0 {
			first = time.Since(t0)
			cpu0 = cpuTime()
			if *cpuprofile != "" {
				stop, err := startCPUProfile(*cpuprofile)
				if err != nil {
					return err
				}
				defer stop()
			}
		} else {
			rest += time.Since(t0)
		}
	}
	if *kprof != "" {
		if ok, err := kernelProfile(b, *kprof == "layers", 5, step, stderr); err != nil {
			return err
		} else if !ok {
			return fmt.Errorf("%w: --kernel-profile needs the OpenCL backend (--device opencl, a build with -tags opencl)", errUsage)
		}
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	// What the net holds per batch: of every layer's output only what a
	// Backward reads outlives the Forward, and the buffers of a step are
	// shared by liveness between outputs and the gradients with respect to
	// them (solver.Net.Buffers).
	use := net.Buffers(*batch)
	if *memprofile != "" {
		runtime.GC() // the profile shows the heap as of the last collection
		f, err := os.Create(*memprofile)
		if err != nil {
			return err
		}
		if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	perStep, cpuStep := first, cpuTime()
	if *steps > 1 {
		perStep = rest / time.Duration(*steps-1)
		cpuStep = (cpuStep - cpu0) / time.Duration(*steps-1)
	}
	res := map[string]any{"model": *model, "params": net.NumParams(), "trainable": net.NumTrainable(), "samples_per_s": float64(*batch) / perStep.Seconds(), "cpu_step_s": cpuStep.Seconds(), "input": fmt.Sprint(net.In), "batch": *batch,
		"steps": *steps, "first_step_s": first.Seconds(), "step_s": perStep.Seconds(),
		"peak_rss_mib": mib(peakRSS()), "rss_before_model_mib": mib(rssBefore),
		"heap_inuse_mib": mib(int64(ms.HeapInuse)), "heap_sys_mib": mib(int64(ms.HeapSys)),
		"total_alloc_mib": mib(int64(ms.TotalAlloc)), "gomaxprocs": runtime.GOMAXPROCS(0),
		"activations_mib": mib(int64(use.Outputs) * 4), "kept_activations_mib": mib(int64(use.Kept) * 4),
		"step_buffers_mib": mib(int64(use.Training) * 4)}
	if budgetBytes > 0 {
		// The planner's estimate, to set beside the measured peak, and
		// the part of the budget it planned the step in.
		res["memory_budget_mib"], res["estimate_mib"] = mib(budgetBytes), mib(plan.Total)
		res["step_limit_mib"] = mib(net.MemoryBudget())
		res["replayed_layers"], res["replayed_segments"] = plan.Replayed, plan.Segments
	}
	if _, peak, ok := gpu.DeviceBytes(b); ok {
		// The device's allocations (OpenCL): the figure to set beside
		// torch.cuda.max_memory_allocated.
		res["device_peak_mib"] = mib(peak)
	}
	if *asJSON {
		return cli.NewEvents(stdout).Emit("done", res)
	}
	fmt.Fprintf(stdout, "%s %v batch %d: %d params, %.2f s/step (first %.2f s), peak RSS %.0f MiB (%.0f before the model), Go heap in use %.0f MiB\n",
		*model, net.In, *batch, net.NumParams(), perStep.Seconds(), first.Seconds(), mib(peakRSS()), mib(rssBefore), mib(int64(ms.HeapInuse)))
	return nil
}

// startCPUProfile starts a CPU profile into path and returns what stops it
// and closes the file.
func startCPUProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// cpuTime is the process's user and system CPU time so far (getrusage):
// on a shared machine, CPU time per step moves less with the others' load
// than wall time does.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// peakRSS is the process's peak resident set in bytes (getrusage's maxrss,
// which Linux gives in KiB), or -1 where the call fails.
func peakRSS() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return -1
	}
	return int64(ru.Maxrss) * 1024
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }
