//go:build opencl

package opencl_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/opencl"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/solver"
)

// TestOpenCLTrainerOverlap trains the same LeNet-5 on the same batches with
// the transfer queue (xfer.go) and without it (Config.OneQueue):
// the losses and the parameters must have the same bits, whichever queue the
// uploads took. With it, from the third step on every batch and its labels
// must go on the transfer queue (solver.Trainer alternates two input
// buffers, the backend two label buffers): the overlap this is for. (In the
// first two steps the batch goes on the compute queue, behind the kernel
// that zeroed its new buffer.)
func TestOpenCLTrainerOverlap(t *testing.T) {
	const steps, batch = 6, 16
	type run struct {
		losses []float64
		params []float32
		xfer   []int64 // bytes on the transfer queue, per step
		in     int     // floats of one input sample
	}
	train := func(oneQueue bool) run {
		cfg := opencl.EnvConfig()
		cfg.Tune, cfg.OneQueue = false, oneQueue
		o, err := opencl.New(cfg)
		if errors.Is(err, gpu.ErrNoOpenCL) || errors.Is(err, gpu.ErrNoDevice) {
			t.Skipf("no OpenCL device: %v", err)
		}
		if err != nil {
			t.Fatal(err)
		}
		defer o.Close()
		if gpu.OverlapsUploads(o) == oneQueue {
			t.Fatalf("one queue %v: OverlapsUploads %v", oneQueue, gpu.OverlapsUploads(o))
		}
		net, err := models.Build(o, "lenet5", models.Config{})
		if err != nil {
			t.Fatal(err)
		}
		net.InitParams(rand.New(rand.NewPCG(1, 2)))
		tr := solver.NewTrainer(net, solver.NewSGD(o, net.NumParams(), 0.9, 1e-4, false), solver.Constant(0.01))
		r := rand.New(rand.NewPCG(3, 4))
		x := make([]float32, batch*net.In.Size())
		labels := make([]int32, batch)
		out := run{in: net.In.Size()}
		for range steps {
			for i := range x {
				x[i] = float32(r.NormFloat64())
			}
			for i := range labels {
				labels[i] = int32(r.IntN(10))
			}
			x0 := opencl.TransferQueued(o)
			loss, err := tr.Step(x, labels)
			if err != nil {
				t.Fatal(err)
			}
			out.losses = append(out.losses, loss)
			out.xfer = append(out.xfer, opencl.TransferQueued(o)-x0)
		}
		out.params = make([]float32, net.NumParams())
		o.Download(out.params, net.Params)
		return out
	}
	two, one := train(false), train(true)
	for i := range two.losses {
		if math.Float64bits(two.losses[i]) != math.Float64bits(one.losses[i]) {
			t.Errorf("step %d: loss %v with the transfer queue, %v without", i, two.losses[i], one.losses[i])
		}
	}
	for i := range two.params {
		if math.Float32bits(two.params[i]) != math.Float32bits(one.params[i]) {
			t.Fatalf("parameter %d: %v with the transfer queue, %v without", i, two.params[i], one.params[i])
		}
	}
	for s, got := range two.xfer {
		// The labels from the first step (their buffers are new, and no
		// kernel has used them), the batch from the third.
		want := int64(4 * batch)
		if s >= 2 {
			want += int64(4 * two.in * batch)
		}
		if got != want || one.xfer[s] != 0 {
			t.Errorf("step %d: %d bytes on the transfer queue (%d with one queue), want %d", s, got, one.xfer[s], want)
		}
	}
}
