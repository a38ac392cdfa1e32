package gpu_test

import (
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/solver"
)

// TestCPUGradientStepAllocatesNothing: after the first step, a LeNet's
// forward and backward pass on the CPU backend (every kernel this package
// runs for it, products, lowering, pooling) allocates nothing, on one
// thread and on two (the worker pool's path).
func TestCPUGradientStepAllocatesNothing(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, model := range []string{"lenet5", "lenet-caffe"} {
		for _, procs := range []int{1, 2} {
			runtime.GOMAXPROCS(procs)
			tr, x, labels := newStep(t, model, 16)
			step := func() { tr.Gradient(x, labels) }
			step()
			if n := testing.AllocsPerRun(5, step); n != 0 {
				t.Errorf("%s at GOMAXPROCS=%d: %v allocations per forward+backward", model, procs, n)
			}
		}
	}
}

// TestCPUStepSameBitsAtAnyThreadCount trains three steps at GOMAXPROCS 1, 2
// and 3 from the same seed and compares the weights bit for bit.
func TestCPUStepSameBitsAtAnyThreadCount(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	var ref []float32
	for _, procs := range []int{1, 2, 3} {
		runtime.GOMAXPROCS(procs)
		tr, x, labels := newStep(t, "lenet-caffe", 32)
		for i := 0; i < 3; i++ {
			if _, err := tr.Step(x, labels); err != nil {
				t.Fatal(err)
			}
		}
		w := make([]float32, tr.Net.NumParams())
		tr.Net.B.Download(w, tr.Net.Params)
		if ref == nil {
			ref = w
			continue
		}
		for i := range w {
			if w[i] != ref[i] {
				t.Fatalf("GOMAXPROCS=%d: weight %d = %v, at GOMAXPROCS=1 %v", procs, i, w[i], ref[i])
			}
		}
	}
}

// newStep builds model on a CPU backend with fixed weights and a random
// batch of MNIST-shaped samples.
func newStep(t testing.TB, model string, batch int) (*solver.Trainer, []float32, []int32) {
	return stepTrainer(t, gpu.NewCPU(), model, models.Config{}, batch)
}

// stepTrainer builds model on be with fixed weights, an SGD-momentum
// trainer, and a random batch of batch samples whose labels cycle over the
// classes: the training step the step benchmarks time.
func stepTrainer(t testing.TB, be gpu.Backend, model string, cfg models.Config, batch int) (*solver.Trainer, []float32, []int32) {
	net, err := models.Build(be, model, cfg)
	if err != nil {
		t.Fatal(err)
	}
	net.InitParams(rand.New(rand.NewPCG(1, 2)))
	tr := solver.NewTrainer(net, solver.NewSGD(be, net.NumParams(), 0.9, 0, false), solver.Constant(0.01))
	r := rand.New(rand.NewPCG(5, 6))
	x := make([]float32, batch*net.In.Size())
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	labels := make([]int32, batch)
	for i := range labels {
		labels[i] = int32(i % net.Out.Size())
	}
	return tr, x, labels
}

// residentStep uploads x once and returns a training step on it (forward,
// loss, backward, optimizer) that uploads nothing: the batch resident on
// the device, as PyTorch's benchmark keeps it.
func residentStep(be gpu.Backend, tr *solver.Trainer, x []float32, labels []int32) func() {
	xb := be.Alloc(len(x))
	be.Upload(xb, x)
	return func() {
		logits := tr.Net.Forward(xb, len(labels), true)
		gpu.MarkSection(be, "loss")
		tr.Loss.Forward(be, logits, labels)
		tr.Net.Backward(tr.Loss.Backward(be))
		tr.Apply()
	}
}
