//go:build opencl

package opencl_test

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/gpu/gputest/steptest"
	"github.com/cotrain/cotrain/gpu/opencl"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/solver"
)

// End to end: the same LeNet-5, the same initial weights and the same
// batches, trained five steps on the CPU and on OpenCL, must end with the
// same parameters (to 1e-4) and losses.

// openForE2E opens the default backend, untuned.
func openForE2E(t testing.TB) *opencl.OpenCL {
	t.Helper()
	return openUntuned(t, nil)
}

// openUntuned opens a backend of the default configuration with tuning off
// and, unless set is nil, set applied to it; it skips t when there is no
// OpenCL device.
func openUntuned(t testing.TB, set func(*opencl.Config)) *opencl.OpenCL {
	t.Helper()
	cfg := opencl.EnvConfig()
	cfg.Tune = false
	if set != nil {
		set(&cfg)
	}
	o, err := opencl.New(cfg)
	if errors.Is(err, gpu.ErrNoOpenCL) || errors.Is(err, gpu.ErrNoDevice) {
		t.Skipf("no OpenCL device: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// lenetRun trains model on b for steps batches and returns the losses and
// the final parameters.
func lenetRun(t *testing.T, b gpu.Backend, model, opt string, steps int) ([]float64, []float32) {
	t.Helper()
	net, err := models.Build(b, model, models.Config{})
	if err != nil {
		t.Fatal(err)
	}
	net.InitParams(rand.New(rand.NewPCG(1, 2)))
	o, err := solver.NewOptimizer(b, opt, net.NumParams(), 0.9, 1e-4, false)
	if err != nil {
		t.Fatal(err)
	}
	lr := float32(0.01)
	if opt == "adam" {
		lr = 1e-3
	}
	tr := solver.NewTrainer(net, o, solver.Constant(lr))
	r := rand.New(rand.NewPCG(3, 4))
	const batch = 16
	x := make([]float32, batch*net.In.Size())
	labels := make([]int32, batch)
	var losses []float64
	for s := 0; s < steps; s++ {
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		for i := range labels {
			labels[i] = int32(r.IntN(10))
		}
		loss, err := tr.Step(x, labels)
		if err != nil {
			t.Fatal(err)
		}
		losses = append(losses, loss)
	}
	params := make([]float32, net.NumParams())
	b.Download(params, net.Params)
	return losses, params
}

// paramDiff counts the parameters of got further than 1e-4 from want
// (relative, with a floor of 1e-3), and gives the worst relative and
// absolute differences.
func paramDiff(want, got []float32) (bad int, worst, worstAbs float64) {
	for i := range want {
		d := math.Abs(float64(got[i]-want[i])) / (math.Abs(float64(want[i])) + 1e-3)
		worst, worstAbs = max(worst, d), max(worstAbs, math.Abs(float64(got[i]-want[i])))
		if d > 1e-4 {
			bad++
		}
	}
	return bad, worst, worstAbs
}

func TestOpenCLLeNetTraining(t *testing.T) {
	o := openForE2E(t)
	defer o.Close()
	for _, c := range []struct{ model, opt string }{{"lenet5", "sgd"}, {"lenet5", "adam"}, {"lenet-caffe", "sgd"}} {
		t.Run(c.model+"/"+c.opt, func(t *testing.T) {
			wantLoss, want := lenetRun(t, cpu.NewCPU(), c.model, c.opt, 5)
			gotLoss, got := lenetRun(t, o, c.model, c.opt, 5)
			for i := range wantLoss {
				if math.Abs(gotLoss[i]-wantLoss[i]) > 1e-4*math.Abs(wantLoss[i]) {
					t.Errorf("step %d: loss %v, want %v", i, gotLoss[i], wantLoss[i])
				}
			}
			// Every parameter within 1e-4 (relative, floor 1e-3) for SGD. Adam
			// divides each update by the gradient's own running RMS, so a
			// parameter whose few gradients are tiny (a ReLU input near 0, a tie
			// in a pooling window: float rounding picks the side) moves by up to
			// lr per step whatever the gradient's size; there, 1e-4 cannot
			// hold. For Adam all but 1 in 10,000 parameters must be within 1e-4
			// and none may differ by more than 0.1·lr·steps.
			bad, worst, worstAbs := paramDiff(want, got)
			switch {
			case c.opt != "adam" && bad > 0:
				t.Errorf("%d parameters differ by more than 1e-4: worst relative difference %.3g", bad, worst)
			case c.opt == "adam" && (bad > len(want)/10000 || worstAbs > 0.1*1e-3*5):
				t.Errorf("%d parameters differ by more than 1e-4, worst by %.3g", bad, worstAbs)
			}
			t.Logf("losses %v; worst parameter difference %.3g relative, %.3g absolute; %d over 1e-4", gotLoss, worst, worstAbs, bad)
			// The same run again on OpenCL gives the same bits.
			_, again := lenetRun(t, o, c.model, c.opt, 5)
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(again[i]) {
					t.Fatalf("second OpenCL run differs at parameter %d", i)
				}
			}
		})
	}
}

// BenchmarkOpenCLTrainStep times one training step (forward, loss,
// backward, SGD with momentum) on the OpenCL device and on the CPU backend
// side by side, so the ratio comes from one run: lenet5 and lenet-caffe at
// batch 64, mobilenet-v1 (α 0.5, 128×128, 1000 classes) at batch 16; on
// OpenCL only (a CPU step takes seconds), mobilenet-v1 (α 1, 224×224) and
// AlexNet (224×224) at batch 32. scripts/bench_gpu.sh sets these names
// beside scripts/bench_torch.py's. The backend is opened as cotrain opens it
// (GEMM tuning from the saved file, or timed now unless
// COTRAIN_OPENCL_TUNE=0).
func BenchmarkOpenCLTrainStep(b *testing.B) {
	// COTRAIN_BENCH_RED_PART=n times the steps with parts of n elements in
	// the two-level reductions (batch norm, depthwise filter gradients).
	cfg := opencl.EnvConfig()
	if n, err := strconv.Atoi(os.Getenv("COTRAIN_BENCH_RED_PART")); err == nil && n > 0 {
		cfg = opencl.WithRedPartLen(cfg, n)
	}
	o, err := opencl.New(cfg)
	if err != nil {
		b.Skipf("no OpenCL device: %v", err)
	}
	defer o.Close()
	cases := []struct {
		name, model string
		cfg         models.Config
		batch       int
		large       bool // OpenCL only
	}{
		{"lenet5/b64", "lenet5", models.Config{}, 64, false},
		{"lenet-caffe/b64", "lenet-caffe", models.Config{}, 64, false},
		{"mobilenet-a0.5-128/b16", "mobilenet-v1", models.Config{Width: 0.5, Input: solver.Shape{C: 3, H: 128, W: 128}}, 16, false},
		{"mobilenet-a1-224/b32", "mobilenet-v1", models.Config{}, 32, true},
		{"alexnet/b32", "alexnet", models.Config{}, 32, true},
	}
	for _, be := range []struct {
		name string
		b    gpu.Backend
	}{{"opencl", o}, {"cpu", cpu.NewCPU()}} {
		for _, c := range cases {
			if c.large && be.name == "cpu" {
				continue
			}
			b.Run(be.name+"/"+c.name, func(b *testing.B) {
				tr, x, labels := steptest.Trainer(b, be.b, c.model, c.cfg, c.batch)
				// Two steps before timing: where uploads overlap, the
				// Trainer allocates its second input buffer in the second.
				tr.Step(x, labels)
				tr.Step(x, labels)
				step := func() {
					if _, err := tr.Step(x, labels); err != nil {
						b.Fatal(err)
					}
				}
				if os.Getenv("COTRAIN_BENCH_RESIDENT") == "1" {
					step = steptest.Resident(be.b, tr, x, labels)
				}
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					step()
				}
				b.ReportMetric(float64(b.N*c.batch)/b.Elapsed().Seconds(), "img/s")
				if cl, ok := be.b.(*opencl.OpenCL); ok && os.Getenv("COTRAIN_OPENCL_PROFILE") != "" {
					// COTRAIN_OPENCL_PROFILE=shapes also splits each
					// kernel's time by global size; =layers by the
					// layer pass (or loss, optimizer) that launched it.
					cl.ProfileShapes(os.Getenv("COTRAIN_OPENCL_PROFILE") == "shapes")
					cl.ProfileSections(os.Getenv("COTRAIN_OPENCL_PROFILE") == "layers")
					b.StopTimer()
					profileStep(b, cl, step)
				}
			})
		}
	}
}

// profileStep logs where one step's time goes, kernel by kernel (each
// launch waited for), over 5 steps.
func profileStep(b *testing.B, o *opencl.OpenCL, step func()) {
	o.Profile(true)
	for i := 0; i < 5; i++ {
		step()
	}
	var total time.Duration
	prof := o.Profile(false)
	for _, kt := range prof {
		total += kt.Total
	}
	// Printed, not logged: the test framework cuts a benchmark's log after
	// a few lines.
	fmt.Fprintf(os.Stderr, "%s: profile over 5 steps: %v in %d kernels\n", b.Name(), total, len(prof))
	for _, kt := range prof {
		fmt.Fprintf(os.Stderr, "  %-34s %6d launches %10v %5.1f%%\n", kt.Name, kt.Launches, kt.Total, 100*kt.Total.Seconds()/total.Seconds())
	}
	// With sections (COTRAIN_OPENCL_PROFILE=layers), each section's total
	// per step, longest first.
	var order []string
	secs := map[string]*opencl.KernelTime{}
	for _, kt := range prof {
		sec, _, ok := strings.Cut(kt.Name, gpu.SectionSep)
		if !ok {
			return
		}
		if secs[sec] == nil {
			secs[sec] = &opencl.KernelTime{Name: sec}
			order = append(order, sec)
		}
		secs[sec].Launches += kt.Launches
		secs[sec].Total += kt.Total
	}
	slices.SortFunc(order, func(a, b string) int { return cmp.Compare(secs[b].Total, secs[a].Total) })
	fmt.Fprintf(os.Stderr, "%s: per section, per step:\n", b.Name())
	for _, sec := range order {
		kt := secs[sec]
		fmt.Fprintf(os.Stderr, "  %-34s %6d launches %10v %5.1f%%\n", sec, kt.Launches/5, kt.Total/5, 100*kt.Total.Seconds()/total.Seconds())
	}
}

// TestOpenCLStepTraffic counts the bytes that cross between host and device
// in a worker's iteration (worker/core.go): the batch and its labels go up,
// forward and backward run on the device, the gradient comes down (it is
// what the worker pushes), the hub's merged gradient goes up and the
// optimizer steps on the device. Nothing else may cross: no activation, no
// weight, no optimizer state, no dropout mask (alexnet-small has two
// dropout layers: the device makes their masks from a seed); of the loss
// only its (hi, lo) float pair.
// Subtest "staged" moves the batch and the gradients through pinned staging
// (stage.go) in chunks smaller than they are: bytes crossing are
// counted once, not once more for the copies into and out of the slots.
func TestOpenCLStepTraffic(t *testing.T) {
	o := openForE2E(t)
	defer o.Close()
	for m, model := range []string{"lenet5", "alexnet-small"} {
		t.Run(model, func(t *testing.T) {
			net, err := models.Build(o, model, models.Config{})
			if err != nil {
				t.Fatal(err)
			}
			net.InitParams(rand.New(rand.NewPCG(1, 2)))
			net.SetRand(rand.New(rand.NewPCG(7, 8)))
			tr := solver.NewTrainer(net, solver.NewSGD(o, net.NumParams(), 0.9, 0, false), solver.Constant(0.01))
			const batch = 16
			r := rand.New(rand.NewPCG(3, 4))
			x := make([]float32, batch*net.In.Size())
			grad := make([]float32, net.NumParams())
			labels := make([]int32, batch)
			iteration := func(first int32) {
				for i := range x {
					x[i] = float32(r.NormFloat64())
				}
				for i := range labels {
					labels[i] = (first + int32(i)) % 10
				}
				tr.Gradient(x, labels)
				o.Download(grad, net.Grads)
				o.Upload(net.Grads, grad) // the merged gradient, as the hub sends it back
				tr.Apply()
			}
			for s, staged := range []bool{false, true} {
				name := map[bool]string{false: "direct", true: "staged"}[staged]
				t.Run(name, func(t *testing.T) {
					// Staged: the batch (50 KB for lenet5, 197 KB for
					// alexnet-small) and the gradient (246 KB, 4.4 MB) above
					// the threshold, the labels and the loss below it.
					defer opencl.SetStaging(o, staged, 4096, 3*4096+4, 2)()
					// The first allocates the input and label buffers and
					// puts labels base.. there (base: none an earlier
					// subtest used).
					b := int32(2*m + s)
					iteration(b)
					// New labels are uploaded; the same ones as last time, or
					// as the time before (the backend keeps two label
					// buffers), are not.
					for it, c := range []struct {
						first  int32
						labels bool
					}{{b, false}, {b + 3, true}, {b, false}, {b + 6, true}} {
						up0, down0 := o.Transferred()
						staged0 := opencl.Staged(o)
						iteration(c.first)
						up, down := o.Transferred()
						wantUp := int64(4*len(x) + 4*len(grad))
						if c.labels {
							wantUp += 4 * batch
						}
						wantDown := int64(4*len(grad) + 8)
						if up-up0 != wantUp || down-down0 != wantDown {
							t.Errorf("iteration %d: %d bytes up, %d down; want %d (batch, labels when new, merged gradient) and %d (gradient, loss)",
								it, up-up0, down-down0, wantUp, wantDown)
						}
						var wantStaged int64
						if staged {
							wantStaged = int64(4*len(x) + 8*len(grad))
						}
						if got := opencl.Staged(o) - staged0; got != wantStaged {
							t.Errorf("iteration %d: %d bytes through the pinned slots, want %d", it, got, wantStaged)
						}
					}
				})
			}
		})
	}
}

// transferSizes are the transfers the benchmarks time: one AlexNet batch
// (32×3×224×224 floats, 19.3 MB: the step's upload) and AlexNet's gradient
// (61.1 M floats, 244 MB: a worker downloads it and uploads the merged one
// every iteration).
var transferSizes = []struct {
	name string
	n    int
}{{"batch", 32 * 3 * 224 * 224}, {"alexnet-grad", 61_100_000}}

// transferModes are the ways the benchmarks move a buffer, side by side in
// one run: straight from Go memory, and through pinned staging with the
// default chunk (16 MiB) and with others (0: the default).
var transferModes = []struct {
	name   string
	staged bool
	chunk  int
}{{"direct", false, 0}, {"staged", true, 0}, {"staged-chunk=1MiB", true, 1 << 20}, {"staged-chunk=4MiB", true, 4 << 20}}

// benchTransfer runs do (an Upload or Download of n floats) in every mode
// of transferModes on one backend.
func benchTransfer(b *testing.B, do func(o *opencl.OpenCL, buf gpu.Buffer, host []float32)) {
	cfg := opencl.EnvConfig()
	cfg.Tune = false
	o, err := opencl.New(cfg)
	if err != nil {
		b.Skipf("no OpenCL device: %v", err)
	}
	defer o.Close()
	for _, size := range transferSizes {
		host := make([]float32, size.n)
		for i := range host {
			host[i] = float32(i)
		}
		buf := o.Alloc(size.n)
		for _, m := range transferModes {
			b.Run(size.name+"/"+m.name, func(b *testing.B) {
				// A threshold of 1 MiB: the batch is staged too.
				defer opencl.SetStaging(o, m.staged, 1<<20, m.chunk, 0)()
				do(o, buf, host) // maps the staging buffer
				b.SetBytes(int64(4 * size.n))
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					do(o, buf, host)
				}
			})
		}
	}
}

// BenchmarkOpenCLUpload times Upload from Go memory, direct and staged
// (the ratio of their MB/s is the staging's gain on this machine).
func BenchmarkOpenCLUpload(b *testing.B) {
	benchTransfer(b, func(o *opencl.OpenCL, buf gpu.Buffer, host []float32) { o.Upload(buf, host) })
}

// BenchmarkOpenCLDownload times Download into Go memory, direct and staged.
func BenchmarkOpenCLDownload(b *testing.B) {
	benchTransfer(b, func(o *opencl.OpenCL, buf gpu.Buffer, host []float32) { o.Download(host, buf) })
}

// TestOpenCLProfileSections profiles a lenet5 training step by sections:
// every launch is named after the layer pass, loss or optimizer step the
// solver marked, and the sections are the network's (each convolution's
// forward and backward among them).
func TestOpenCLProfileSections(t *testing.T) {
	o := openForE2E(t)
	defer o.Close()
	tr, x, labels := steptest.Trainer(t, o, "lenet5", models.Config{}, 4)
	o.ProfileSections(true)
	defer o.ProfileSections(false)
	o.Profile(true)
	if _, err := tr.Step(x, labels); err != nil {
		t.Fatal(err)
	}
	secs := map[string]int{}
	for _, kt := range o.Profile(false) {
		sec, kernel, ok := strings.Cut(kt.Name, gpu.SectionSep)
		if !ok || sec == "" || kernel == "" {
			t.Fatalf("profile entry %q names no section and kernel", kt.Name)
		}
		secs[sec] += kt.Launches
	}
	var want []string
	for _, l := range tr.Net.Layers() {
		if l.Kind == "conv2d" {
			want = append(want, l.Name+" forward", l.Name+" backward")
		}
	}
	want = append(want, "loss", "optimizer")
	if len(want) < 6 {
		t.Fatalf("lenet5 has %d sections to look for, want two convolutions' besides loss and optimizer", len(want))
	}
	for _, sec := range want {
		if secs[sec] == 0 {
			t.Errorf("no launch in section %q; sections %v", sec, secs)
		}
	}
}
