package cpu_test

import (
	"runtime"
	"testing"

	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/gpu/gputest/steptest"
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
	return steptest.Trainer(t, cpu.NewCPU(), model, models.Config{}, batch)
}
